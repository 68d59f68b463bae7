#!/usr/bin/env python3
"""docs_check.py: the documentation cannot rot (issue 38). Run by ctest.

  docs_check.py readme ROOT BUILD CC LIBRARY [CFLAG...]
      README.md: at most 330 lines, the quick start in its first 60, no
      commit hash; every fenced code block is checked: `c` blocks are
      compiled (-Wall -Wextra -Werror) against include/lull.h, and those
      with a main() linked against LIBRARY and run (exit 0); the first
      program is examples/hello.c, byte for byte; `sh` blocks name only
      commands and files that exist (the repository, BUILD for build/...,
      or PATH); `cmake` blocks use only targets lib/CMakeLists.txt exports
      and the find_package call tests/consumer/ makes; `text` blocks are
      not code. A block of any other language fails.
  docs_check.py options ROOT
      Every LULL_GC_PARAMS key the parser (lib/base/config.c, apply_param)
      knows is in doc/options.md's table and every key there is parsed;
      the same for LULL_GC_DEBUG (apply_debug) and doc/debugging.md.
  docs_check.py api ROOT
      doc/api.md mentions every public function, type, macro and constant
      of include/lull.h (names without the internal lull__/LULL__ prefix);
      lull.h has no commit hash and no benchmark figure.
"""
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

HASH = re.compile(r'\b(?:At|at|lull) [0-9a-f]{7,40}\b|\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}\b')
failures = []


def fail(msg):
    failures.append(msg)
    print('docs_check: FAIL: ' + msg, file=sys.stderr)


def read(root, path):
    with open(os.path.join(root, path), encoding='utf-8') as f:
        return f.read()


def fenced_blocks(text):
    """(language, first line number, body) of every ``` block."""
    blocks, lang, start, body = [], None, 0, []
    for n, line in enumerate(text.split('\n'), 1):
        m = re.match(r'^```(\S*)\s*$', line)
        if m and lang is None:
            lang, start, body = m.group(1), n, []
        elif line.strip() == '```' and lang is not None:
            blocks.append((lang, start, '\n'.join(body) + '\n'))
            lang = None
        elif lang is not None:
            body.append(line)
    if lang is not None:
        fail('README.md:%d: a code block is never closed' % start)
    return blocks


def check_c(root, build, cc, lib, cflags, line, body, tmp):
    src = os.path.join(tmp, 'block%d.c' % line)
    with open(src, 'w') as f:
        f.write(body)
    base = [cc, '-std=c11', '-D_GNU_SOURCE', '-Wall', '-Wextra', '-Werror', '-I', os.path.join(root, 'include')]
    base += cflags
    has_main = re.search(r'^\s*int\s+main\s*\(', body, re.M) is not None
    if has_main:
        exe = os.path.join(tmp, 'block%d' % line)
        cmd = base + [src, '-o', exe, lib, '-Wl,-rpath,' + os.path.dirname(lib), '-pthread']
    else:
        cmd = base + ['-c', src, '-o', src + '.o']
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        fail('README.md:%d: the C block does not compile:\n%s' % (line, r.stdout + r.stderr))
        return
    if has_main:
        try:
            r = subprocess.run([exe], capture_output=True, text=True, timeout=120)
        except subprocess.TimeoutExpired:
            fail('README.md:%d: the program did not end within 120 s' % line)
            return
        print('README.md:%d: ran: %s' % (line, r.stdout.strip()))
        if r.returncode:
            fail('README.md:%d: the program exited with %d:\n%s' % (line, r.returncode, r.stdout + r.stderr))
    else:
        print('README.md:%d: compiled' % line)


def path_exists(root, build, word):
    if word.startswith('build/'):
        return os.path.exists(os.path.join(build, word[len('build/'):]))
    return os.path.exists(os.path.join(root, word))


def check_sh(root, build, line, body):
    for k, raw in enumerate(body.split('\n')):
        text = raw.split(' #')[0].strip()
        if not text or text.startswith('#'):
            continue
        text = re.sub(r'\$\([^)]*\)', '', text)     # $(pkg-config ...): its command is checked below
        for sub in re.findall(r'\$\(([^)]*)\)', raw):
            if not shutil.which(shlex.split(sub)[0]):
                fail('README.md:%d: command %r not found' % (line + 1 + k, shlex.split(sub)[0]))
        words = shlex.split(text)
        while words and re.match(r'^[A-Z_][A-Z_0-9]*=', words[0]):
            words = words[1:]
        if not words:
            continue
        cmd = words[0]
        ok = path_exists(root, build, cmd) if '/' in cmd else shutil.which(cmd) is not None
        if not ok:
            fail('README.md:%d: command %r does not exist' % (line + 1 + k, cmd))
        for w in words[1:]:
            if '/' in w and not w.startswith(('-', '/', '$', 'http')) and '=' not in w:
                if not path_exists(root, build, w):
                    fail('README.md:%d: %r does not exist' % (line + 1 + k, w))
    print('README.md:%d: shell commands and files exist' % line)


def check_cmake(root, line, body):
    libs = read(root, 'lib/CMakeLists.txt')
    consumer = read(root, 'tests/consumer/CMakeLists.txt')
    for target in re.findall(r'\blull::(\w+)', body):
        if not re.search(r'add_library\(lull::%s ALIAS' % target, libs):
            fail('README.md:%d: target lull::%s is not defined by lib/CMakeLists.txt' % (line, target))
    for call in re.findall(r'find_package\([^)]*\)', body):
        if call not in consumer:
            fail('README.md:%d: %s is not what tests/consumer/CMakeLists.txt calls' % (line, call))
    print('README.md:%d: cmake targets exist' % line)


def readme(root, build, cc, lib, cflags):
    text = read(root, 'README.md')
    lines = text.splitlines()
    if len(lines) > 330:
        fail('README.md has %d lines (at most about 330)' % len(lines))
    qs = [n for n, l in enumerate(lines, 1) if re.match(r'^## Quick start', l)]
    if not qs or qs[0] > 60 or not any('ci/test' in l for l in lines[:60]):
        fail('README.md: the quick start (with ci/test and ci/demo) is not in the first 60 lines')
    for n, l in enumerate(lines, 1):
        if HASH.search(l):
            fail('README.md:%d: a commit hash: %s' % (n, l))
    hello = read(root, 'examples/hello.c')
    blocks = fenced_blocks(text)
    if not any(lang == 'c' and body == hello for lang, _, body in blocks):
        fail('README.md: no C block is examples/hello.c as it is')
    with tempfile.TemporaryDirectory() as tmp:
        for lang, line, body in blocks:
            if lang == 'c':
                check_c(root, build, cc, lib, cflags, line, body, tmp)
            elif lang == 'sh':
                check_sh(root, build, line, body)
            elif lang == 'cmake':
                check_cmake(root, line, body)
            elif lang != 'text':
                fail('README.md:%d: a code block of language %r, which no test checks' % (line, lang))
    print('docs_check: README.md: %d code blocks checked' % len(blocks))


def parser_keys(config, function):
    """The keys `function` and its helpers (function_*) compare against."""
    bodies = [m.group(0) for m in re.finditer(r'\nstatic int %s(?:_[a-z]+)?\(.*?\n}\n' % function, config, re.S)]
    if not bodies:
        fail('lib/base/config.c: no function %s' % function)
        return set()
    return set(k for b in bodies for k in re.findall(r'!strcmp\(key, "([a-z0-9-]+)"\)', b))


def doc_keys(text):
    keys = set()
    for line in text.split('\n'):
        m = re.match(r'^\| `([a-z0-9-]+)[=`\\|]', line)
        if m:
            keys.add(m.group(1))
    return keys


def options(root):
    config = read(root, 'lib/base/config.c')
    for function, doc in (('apply_param', 'doc/options.md'), ('apply_debug', 'doc/debugging.md')):
        parsed, documented = parser_keys(config, function), doc_keys(read(root, doc))
        for k in sorted(parsed - documented):
            fail('%s: the parser knows %r (%s) but the table does not list it' % (doc, k, function))
        for k in sorted(documented - parsed):
            fail('%s: the table lists %r, which the parser (%s) does not know' % (doc, k, function))
        print('docs_check: %s: %d keys, as the parser' % (doc, len(parsed & documented)))


def public_names(header):
    """Functions, types, macros and constants of lull.h, internals excluded."""
    text = re.sub(r'/\*.*?\*/', '', header, flags=re.S)
    names = set()
    names |= set(re.findall(r'\b(lull_[a-z0-9_]+)\s*\(', text))            # functions (and function-like macros)
    names |= set(re.findall(r'typedef\s[^;{]*?\b(lull_[a-z0-9_]+)\s*;', text))
    names |= set(re.findall(r'}\s*(lull_[a-z0-9_]+)\s*;', text))            # typedef struct {...} name;
    names |= set(re.findall(r'\(\*(lull_[a-z0-9_]+)\)', text))              # function pointer types
    names |= set(re.findall(r'enum\s+(lull_[a-z0-9_]+)', text))
    names |= set(re.findall(r'#define\s+(LULL_[A-Z0-9_]+|lull_[a-z0-9_]+)', text))
    names |= set(re.findall(r'\b(LULL_[A-Z0-9_]+)\s*[=,]', text))          # enum constants
    names |= set(re.findall(r'\b(LULL_[A-Z0-9_]+)\s*}', text))
    return {n for n in names if not n.startswith(('lull__', 'LULL__')) and n != 'LULL_H'}


def api(root):
    header = read(root, 'include/lull.h')
    doc = read(root, 'doc/api.md')
    names = public_names(header)
    if len(names) < 40:
        fail('include/lull.h: only %d public names found: the parser of this test is broken' % len(names))
    for n in sorted(names):
        if not re.search(r'(?<![A-Za-z0-9_])%s(?![A-Za-z0-9_])' % re.escape(n), doc):
            fail('doc/api.md does not mention %s (public in include/lull.h)' % n)
    for n, l in enumerate(header.split('\n'), 1):
        if HASH.search(l):
            fail('include/lull.h:%d: a commit hash: %s' % (n, l))
        if re.search(r'\b\d+(\.\d+)?x\b|\bbench/|\d+(\.\d+)? ?(ns|us) (a|per|alone)\b', l):
            fail('include/lull.h:%d: a benchmark figure: %s' % (n, l))
    if not failures:
        print('docs_check: doc/api.md mentions all %d public names of include/lull.h' % len(names))


def main(argv):
    if len(argv) >= 6 and argv[1] == 'readme':
        readme(argv[2], argv[3], argv[4], argv[5], argv[6:])
    elif len(argv) == 3 and argv[1] == 'options':
        options(argv[2])
    elif len(argv) == 3 and argv[1] == 'api':
        api(argv[2])
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
