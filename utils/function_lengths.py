#!/usr/bin/env python3
"""Lengths of the C++ function bodies under the given folders (issue 38's
rule: no function in lib/, dialects/ or tools/ over 120 lines).

A function body is a top-level `{ ... }` (not inside another function)
whose header ends like a signature: `)` followed by qualifiers such as
const / override / noexcept / `-> T`, or a constructor's initialiser list.
Comments, string and character literals and raw strings are blanked first;
lambdas and local classes count towards the function around them.
The length is the number of lines from the opening to the closing brace.

  function_lengths.py [--max N] [--list M] DIR_OR_FILE...

prints every function over M lines (default N), then a summary line, and
exits 1 when one is over N (default 120).
"""
import argparse
import os
import re
import sys

SOURCE_SUFFIXES = ('.cpp', '.h', '.cu', '.cuh', '.inc')
CONTROL = re.compile(r'\b(if|for|while|switch|catch)\s*\(.*\)\s*$', re.S)
SIGNATURE_END = re.compile(
    r'\)\s*((const|override|final|noexcept|mutable|&&?)\s*)*(->\s*[\w:<>,\s*&]+)?$')
SCOPE = re.compile(r'\b(namespace|class|struct|union|enum)\b[^;{}()]*$|extern\s*"C"\s*$')


def blank_literals(src):
    """`src` with comments and literals replaced by spaces (newlines kept)."""
    out = []
    i, n = 0, len(src)
    blank = lambda text: re.sub(r'[^\n]', ' ', text)
    while i < n:
        if src.startswith('//', i):
            j = src.find('\n', i)
            j = n if j < 0 else j
        elif src.startswith('/*', i):
            j = src.find('*/', i + 2)
            j = n if j < 0 else j + 2
        elif src.startswith('R"', i) and (i == 0 or not (src[i - 1].isalnum() or src[i - 1] == '_')):
            m = re.match(r'R"([^()\\\s]{0,16})\(', src[i:])
            if not m:
                out.append(src[i])
                i += 1
                continue
            close = ')' + m.group(1) + '"'
            j = src.find(close, i + m.end())
            j = n if j < 0 else j + len(close)
        elif src[i] in '"\'' and not (src[i] == "'" and i > 0 and src[i - 1].isalnum()):
            quote, j = src[i], i + 1
            while j < n and src[j] != quote and src[j] != '\n':
                j += 2 if src[j] == '\\' else 1
            j = min(j + 1, n)
        else:
            out.append(src[i])
            i += 1
            continue
        out.append(blank(src[i:j]))
        i = j
    return ''.join(out)


def functions(path):
    """(name, first line, length) of each function body in `path`."""
    with open(path, errors='replace') as f:
        text = blank_literals(f.read())
    stack = []  # (kind, line, name) of the open braces
    header_start, line = 0, 1
    found = []
    for i, c in enumerate(text):
        if c == '\n':
            line += 1
        elif c == '{':
            header = text[header_start:i].strip()
            in_function = any(kind == 'function' for kind, _, _ in stack)
            last_line = header.split('\n')[-1]
            if (not in_function and SIGNATURE_END.search(header)
                    and not CONTROL.search(last_line) and not header.endswith('= ')):
                names = re.findall(r'([\w:~]+(?:<[^()]*>)?)\s*\(', header)
                stack.append(('function', line, names[0] if names else '?'))
            elif SCOPE.search(header):
                stack.append(('scope', line, ''))
            else:
                stack.append(('block', line, ''))
            header_start = i + 1
        elif c == '}':
            if stack:
                kind, start, name = stack.pop()
                if kind == 'function':
                    found.append((name, start, line - start + 1))
            header_start = i + 1
        elif c == ';':
            header_start = i + 1
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--max', type=int, default=120, help='longest allowed function')
    parser.add_argument('--list', type=int, help='list functions over this many lines')
    parser.add_argument('paths', nargs='+')
    args = parser.parse_args()
    listed = args.max if args.list is None else args.list
    rows = []
    for root in args.paths:
        files = [root] if os.path.isfile(root) else sorted(
            os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs)
        for path in files:
            if path.endswith(SOURCE_SUFFIXES):
                rows += [(length, path, start, name) for name, start, length in functions(path)]
    if not rows:
        print('function_lengths: no C++ functions found under', ' '.join(args.paths))
        return 1
    rows.sort(key=lambda r: (-r[0], r[1], r[2]))
    for length, path, start, name in rows:
        if length > listed:
            print(f'{path}:{start}: {name}: {length} lines')
    over = sum(1 for r in rows if r[0] > args.max)
    print(f'{len(rows)} functions, the longest {rows[0][0]} lines; {over} over {args.max}')
    return 1 if over else 0


if __name__ == '__main__':
    sys.exit(main())
