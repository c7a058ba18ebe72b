"""What the test/Bench checkers share: expect() records a failed check,
num() reads a CSV cell as a number, png_ok() checks a PNG's signature and
finish() prints the verdict and exits."""
import sys

failed = []


def expect(cond, what):
    if not cond:
        print("FAIL " + what)
        failed.append(what)
    return cond


def num(r, k):
    try:
        return float(r[k])
    except (KeyError, ValueError, TypeError):
        return None


def png_ok(path):
    with open(path, "rb") as f:
        if expect(f.read(8) == b"\x89PNG\r\n\x1a\n", path + " is a PNG"):
            print("png ok")


def finish():
    print("FAILED" if failed else "ALL PASSED")
    sys.exit(1 if failed else 0)
