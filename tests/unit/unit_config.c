/* The option parser: every key, every rejection, precedence of the
 * environment over the lull_init argument. */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "base/config.h"
#include "unit.h"

static lull_config parse_ok(const char *p)
{
    lull_config c;
    int r = lull_config_parse(&c, p);
    UCHECK(r == 0, "'%s' rejected (%d)", p ? p : "(null)", r);
    return c;
}

static void parse_bad(const char *p)
{
    lull_config c;
    UCHECK(lull_config_parse(&c, p) == -EINVAL, "'%s' accepted", p ? p : "(null)");
}

int main(void)
{
    unsetenv("LULL_GC_PARAMS");
    unsetenv("LULL_GC_DEBUG");
    size_t sz;
    UCHECK(lull_config_parse_size("4m", &sz) == 0 && sz == 4u << 20, "4m");
    UCHECK(lull_config_parse_size("3K", &sz) == 0 && sz == 3072, "3K");
    UCHECK(lull_config_parse_size("2g", &sz) == 0 && sz == (size_t)2 << 30, "2g");
    UCHECK(lull_config_parse_size("123", &sz) == 0 && sz == 123, "123");
    UCHECK(lull_config_parse_size("", &sz) == -EINVAL, "empty");
    UCHECK(lull_config_parse_size("-1m", &sz) == -EINVAL, "negative");
    UCHECK(lull_config_parse_size("4mb", &sz) == -EINVAL, "trailing");
    UCHECK(lull_config_parse_size("99999999999999999999", &sz) == -EINVAL, "overflow");
    UCHECK(lull_config_parse_size("99999999999999g", &sz) == -EINVAL, "shift overflow");

    lull_config d = parse_ok(NULL);
    UCHECK(d.nursery_size == 4u << 20 && d.max_heap_size == 0 && d.major == LULL_MAJOR_CONCURRENT &&
           d.mark_workers >= 1 && d.mark_workers <= 8 && d.concurrent_sweep && !d.card_every_store && d.allow_synchronous_major &&
           d.finalizers == LULL_FINALIZERS_AUTO && d.suspend_signal == SIGPWR && d.restart_signal == SIGXCPU,
           "defaults");
    parse_ok("");
    lull_config c = parse_ok("nursery-size=1m, max-heap-size=64m,major=stw,mark-workers=3,"
                             "concurrent-sweep=no,card-filter=no,allow-synchronous-major=no,finalizers=manual,"
                             "suspend-signal=10,restart-signal=12");
    UCHECK(c.nursery_size == 1u << 20 && c.max_heap_size == 64u << 20 && c.major == LULL_MAJOR_STW &&
           c.mark_workers == 3 && !c.concurrent_sweep && c.card_every_store && !c.allow_synchronous_major &&
           c.finalizers == LULL_FINALIZERS_MANUAL && c.suspend_signal == 10 && c.restart_signal == 12,
           "all keys");

    c = parse_ok("max-heap-size=0");
    UCHECK(c.max_heap_size == 0, "max-heap-size=0: no limit");
    c = parse_ok("environment=debug-only");
    UCHECK(c.environment == LULL_ENV_DEBUG_ONLY, "environment=debug-only");

    const char *bad[] = {
        "bogus=1", "nursery-size", "nursery-size=3m", "nursery-size=32k", "nursery-size=2g",
        "nursery-size=x", "max-heap-size=100k", "max-heap-size=1m1", "environment=maybe",
        "major=incremental", "mark-workers=0", "mark-workers=65", "mark-workers=-1",
        "concurrent-sweep=maybe", "card-filter=always", "allow-synchronous-major=", "finalizers=never",
        "suspend-signal=9", "suspend-signal=11", "restart-signal=0", "restart-signal=999",
        "suspend-signal=10,restart-signal=10", "=4m", "major=stw,,oops",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        parse_bad(bad[i]);

    /* The environment applies on top of the argument. */
    setenv("LULL_GC_PARAMS", "major=stw,nursery-size=8m", 1);
    c = parse_ok("major=concurrent,max-heap-size=2g");
    UCHECK(c.major == LULL_MAJOR_STW && c.nursery_size == 8u << 20 && c.max_heap_size == (size_t)2 << 30,
           "env precedence");
    c = parse_ok("pause-target=250us");
    UCHECK(c.pause_target_ns == 250000, "pause-target=250us");
    c = parse_ok(NULL);
    UCHECK(c.pause_target_ns == 5000000, "pause-target defaults to 5 ms");
    UCHECK(c.release_delay_ns == 1000000000, "release-delay defaults to 1 s");
    c = parse_ok("release-delay=0");
    UCHECK(c.release_delay_ns == 0, "release-delay=0");
    c = parse_ok("release-delay=250ms");
    UCHECK(c.release_delay_ns == 250000000, "release-delay=250ms");
    setenv("LULL_GC_PARAMS", "major=sideways", 1);
    parse_bad("major=stw");
    unsetenv("LULL_GC_PARAMS");

    setenv("LULL_GC_DEBUG", "verify,poison,log,collect-every=100,fail-mmap=7,mark-stack-limit=64", 1);
    c = parse_ok(NULL);
    UCHECK(c.verify && c.poison && c.log && c.collect_every == 100 && c.fail_mmap == 7 &&
           c.mark_stack_limit == 64, "debug options");
    setenv("LULL_GC_DEBUG", "heap-shot=/tmp/shots.txt,verify", 1);
    c = parse_ok(NULL);
    UCHECK(!strcmp(c.heap_shot_file, "/tmp/shots.txt") && c.verify, "heap-shot=FILE");
    setenv("LULL_GC_DEBUG", "card-budget=256", 1);
    c = parse_ok(NULL);
    UCHECK(c.card_budget == 256, "card-budget=256");
    const char *badd[] = { "verify=1", "collect-every", "collect-every=0", "fail-mmap=x", "nonsense",
                           "heap-shot", "heap-shot=", "card-budget", "card-budget=0", "card-budget=1073741825" };
    for (size_t i = 0; i < sizeof badd / sizeof *badd; i++) {
        setenv("LULL_GC_DEBUG", badd[i], 1);
        parse_bad(NULL);
    }
    unsetenv("LULL_GC_DEBUG");
    puts("unit_config: ok");
    return 0;
}
