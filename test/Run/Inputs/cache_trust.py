#!/usr/bin/env python3
"""The compile cache trusts nothing it did not write (issue 37,
lib/Driver/CompileCache.cpp):

    cache_trust.py MODEL.nn WORKDIR

- a new cache folder is created 0700, its entries 0700/0600 whatever the umask;
- a folder that another user owns, or that its group or others can write,
  is refused with an error that names it, and nothing is loaded from it;
- a library planted in an entry (a constructor that would leave a file), a
  truncated, empty or missing library and a missing or edited manifest are
  found before dlopen: the entry is built again and the model runs;
- temporaries of killed builds older than an hour are removed, newer ones kept;
- without NNCC_CACHE_DIR, XDG_CACHE_HOME and HOME the account's home is used,
  never a shared /tmp folder.
"""
import os
import pwd
import shutil
import stat
import subprocess
import sys
import time

from nncc_testing.safetensors import load_safetensors


def fail(msg):
    sys.exit("FAIL: " + msg)


def nncc(work, cache, out, env_extra=None, expect_ok=True, umask=None):
    env = dict(os.environ)
    if cache is not None:
        env["NNCC_CACHE_DIR"] = cache
    env.update(env_extra or {})
    env = {k: v for k, v in env.items() if v is not None}
    r = subprocess.run(["nncc", "run", MODEL, "--random-inputs", "--dim", "B=2", "--seed", "3",
                        "--quiet", "-o", os.path.join(work, out)], env=env, capture_output=True,
                       text=True, preexec_fn=(lambda: os.umask(umask)) if umask is not None else None)
    if expect_ok and r.returncode != 0:
        fail(f"nncc run failed: {r.stderr}")
    if not expect_ok and r.returncode == 0:
        fail("nncc run succeeded where it should refuse")
    return r


def mode(path):
    return stat.S_IMODE(os.lstat(path).st_mode)


def the_entry(cache):
    names = [e for e in os.listdir(cache) if len(e) == 32]
    if len(names) != 1:
        fail(f"expected one entry in {cache}, found {names}")
    return os.path.join(cache, names[0])


def main():
    global MODEL
    MODEL, work = sys.argv[1], sys.argv[2]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    cache = os.path.join(work, "cache")

    nncc(work, cache, "ref.st", umask=0o002)
    ref = load_safetensors(os.path.join(work, "ref.st"))
    entry = the_entry(cache)
    lib = os.path.join(entry, "libtiny.so")
    if mode(cache) != 0o700 or mode(entry) != 0o700:
        fail(f"cache {oct(mode(cache))}, entry {oct(mode(entry))}: expected 0o700 under umask 002")
    for f in os.listdir(entry):
        m = mode(os.path.join(entry, f))
        if m & 0o077:
            fail(f"{f} has mode {oct(m)} under umask 002")
    print("private: cache and entry 0700 under umask 002")

    def same_outputs(out):
        got = load_safetensors(os.path.join(work, out))
        if any(got[k].tobytes() != v.tobytes() for k, v in ref.items()):
            fail(f"{out}: outputs differ from the first run's")

    # Folders that others could write, or that belong to another user.
    for what, change, undo in [
            ("group-writable", lambda: os.chmod(cache, 0o770), lambda: os.chmod(cache, 0o700)),
            ("world-writable", lambda: os.chmod(cache, 0o707), lambda: os.chmod(cache, 0o700)),
            ("another user's", lambda: os.chown(cache, 4242, -1), lambda: os.chown(cache, os.geteuid(), -1))]:
        change()
        r = nncc(work, cache, "x.st", expect_ok=False)
        undo()
        if cache not in r.stderr or "nncc: error:" not in r.stderr:
            fail(f"{what} cache: the error does not name the folder: {r.stderr!r}")
        print(f"{what} cache refused: {r.stderr.strip().splitlines()[0][:60]}...")

    # Damage: each is found before dlopen, the entry rebuilt, the model runs.
    planted_src = os.path.join(work, "planted.c")
    marker = os.path.join(work, "PLANTED-RAN")
    open(planted_src, "w").write(
        '#include <stdio.h>\n__attribute__((constructor)) static void ran(void) {\n'
        f'  FILE *f = fopen("{marker}", "w"); if (f) fclose(f);\n}}\n'
        'void *nncc_model_get_abi(void) { return 0; }\n')
    planted = os.path.join(work, "planted.so")
    subprocess.run(["cc", "-shared", "-fPIC", planted_src, "-o", planted], check=True)

    def plant():
        shutil.copy(planted, lib)
        os.chmod(lib, 0o700)

    def truncate():
        data = open(lib, "rb").read()
        open(lib, "wb").write(data[: len(data) // 2])

    def edit_manifest():
        text = open(os.path.join(entry, "manifest")).read().split()
        text[3] = "0" * 64
        open(os.path.join(entry, "manifest"), "w").write(" ".join(text) + "\n")

    damages = [("a planted library", plant),
               ("a truncated library", truncate),
               ("an empty library", lambda: open(lib, "wb").close()),
               ("a missing library", lambda: os.remove(lib)),
               ("a missing manifest", lambda: os.remove(os.path.join(entry, "manifest"))),
               ("an edited manifest", edit_manifest),
               ("a group-writable library", lambda: os.chmod(lib, 0o770))]
    for i, (what, damage) in enumerate(damages):
        damage()
        r = nncc(work, cache, f"d{i}.st")
        if os.path.exists(marker):
            fail(f"{what}: the planted library ran")
        if "is damaged" not in r.stderr:
            fail(f"{what}: no warning: {r.stderr!r}")
        same_outputs(f"d{i}.st")
        if the_entry(cache) != entry:
            fail(f"{what}: the entry moved")
        print(f"{what}: rebuilt ({r.stderr.strip()[r.stderr.find('('):][:50]}...)")

    # Temporaries of killed builds: removed after an hour, kept before.
    old = os.path.join(cache, "tmp-killed-old")
    new = os.path.join(cache, "tmp-killed-new")
    for d in (old, new):
        os.makedirs(d)
        open(os.path.join(d, "half.gch"), "w").write("x")
    hours_ago = time.time() - 2 * 3600
    os.utime(old, (hours_ago, hours_ago))
    nncc(work, cache, "t.st")
    if os.path.exists(old) or not os.path.exists(new):
        fail("stale temporaries: the old one should go, the new one stay")
    print("stale temporaries: the old removed, the recent kept")

    # No cache variables: the account's home, not /tmp.
    home = pwd.getpwuid(os.geteuid()).pw_dir
    tmp_cache = "/tmp/nncc-cache"
    before = os.path.exists(tmp_cache)
    nncc(work, None, "h.st", {"NNCC_CACHE_DIR": None, "XDG_CACHE_HOME": None, "HOME": None})
    if not before and os.path.exists(tmp_cache):
        fail("without HOME the cache went to /tmp/nncc-cache")
    home_cache = os.path.join(home, ".cache", "nncc")
    if not os.path.isdir(home_cache) or mode(home_cache) & 0o022:
        fail(f"without HOME the cache should be {home_cache}, private")
    print("no HOME: the account's home folder")
    print("OK")


if __name__ == "__main__":
    main()
