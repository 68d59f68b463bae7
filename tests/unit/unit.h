/* unit.h — a minimal check macro for the internal unit tests. */
#ifndef LULL_UNIT_H
#define LULL_UNIT_H
#include <stdio.h>
#include <stdlib.h>
#define UCHECK(cond, ...)                                                       \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                      \
            fputc('\n', stderr);                                               \
            exit(1);                                                           \
        }                                                                      \
    } while (0)
#endif
