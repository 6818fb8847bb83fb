"""``xfft.launch`` itself, with tiny scripts (no JAX): environment, prefixes, exit codes, deadline, cleanup."""

from __future__ import annotations

import io
import os
import re
import sys
import textwrap
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from _helpers import run  # noqa: E402

from xfft import launch as xl  # noqa: E402

pytestmark = pytest.mark.timeout(120)


def _script(tmp_path: Path, body: str) -> str:
    p = tmp_path / "rank_script.py"
    p.write_text("import os, sys, time\nrank = int(os.environ['XFFT_PROCESS_ID'])\n" + textwrap.dedent(body))
    return str(p)


def _cli(*args: str, timeout: float = 60):
    return run([sys.executable, "-m", "xfft.launch", *args], timeout)


def test_all_ranks_succeed_with_their_environment(tmp_path):
    s = _script(tmp_path, """
        print("env", os.environ["XFFT_NUM_PROCESSES"], os.environ["XFFT_CPU_DEVICES"],
              os.environ["XFFT_COORDINATOR_ADDRESS"], os.environ["JAX_PLATFORMS"], os.environ["XLA_FLAGS"],
              sys.argv[1:])
        print("to stderr", file=sys.stderr)
    """)
    r = _cli("-n", "3", "--devices-per-process", "2", "--timeout", "30", s, "--flag", "x")
    assert r.code == 0, r.out
    addrs = set()
    for rank in range(3):
        m = re.search(rf"^\[rank {rank}\] env 3 2 (127\.0\.0\.1:\d+) cpu (.*) \['--flag', 'x'\]$", r.out, re.M)
        assert m, r.out
        addrs.add(m.group(1))
        assert m.group(2).count("xla_force_host_platform_device_count") == 1
        assert "--xla_force_host_platform_device_count=2" in m.group(2)
        assert f"[rank {rank}] to stderr" in r.out
    assert len(addrs) == 1  # one coordinator for everyone
    assert "xfft.launch: all 3 ranks exited 0" in r.out


def test_first_failure_kills_the_rest_and_its_code_is_returned(tmp_path):
    s = _script(tmp_path, """
        if rank == 1:
            time.sleep(0.5)
            sys.exit(7)
        time.sleep(60)
    """)
    r = _cli("-n", "4", "--timeout", "50", s)
    assert r.code == 7, r.out
    assert r.wall < 15, r.wall
    assert re.search(r"^xfft\.launch: rank 1 exited with code 7 after \S+ s; stopping ranks \[0, 2, 3\]$", r.out,
                     re.M), r.out
    assert "xfft.launch: FAILED: rank 1 exited with code 7" in r.out


def test_deadline_returns_124_and_kills_descendants(tmp_path):
    pids = tmp_path / "pids"
    pids.mkdir()
    s = _script(tmp_path, f"""
        import subprocess
        child = subprocess.Popen(["sleep", "300"])
        open(os.path.join({str(pids)!r}, str(rank)), "w").write(str(child.pid))
        time.sleep(300)
    """)
    r = _cli("-n", "2", "--timeout", "3", s)
    assert r.code == 124, r.out
    assert r.wall < 15, r.wall
    assert "xfft.launch: timeout: ranks [0, 1] still running after the 3 s deadline" in r.out
    time.sleep(0.5)
    for f in pids.iterdir():
        pid = int(f.read_text())
        alive = os.path.exists(f"/proc/{pid}") and "Z" not in Path(f"/proc/{pid}/stat").read_text().split()[2]
        assert not alive, f"grandchild {pid} of rank {f.name} survived the launcher"


def test_signal_exit_is_reported_as_128_plus_signal(tmp_path):
    s = _script(tmp_path, """
        import signal
        if rank == 0:
            os.kill(os.getpid(), signal.SIGKILL)
        time.sleep(60)
    """)
    r = _cli("-n", "2", "--timeout", "30", s)
    assert r.code == 137, r.out
    assert "xfft.launch: FAILED: rank 0 was killed by SIGKILL" in r.out


def test_python_api_returns_code_and_writes_to_given_streams(tmp_path):
    s = _script(tmp_path, "print('hello', rank)\nsys.exit(3 if rank == 1 else 0)\n")
    out, err = io.StringIO(), io.StringIO()
    code = xl.launch(s, nprocs=2, devices_per_process=None, timeout=30, stdout=out, stderr=err)
    assert code == 3
    assert "[rank 0] hello 0" in out.getvalue() and "[rank 1] hello 1" in out.getvalue()
    assert "FAILED: rank 1 exited with code 3" in err.getvalue()
    out = io.StringIO()
    assert xl.launch("platform", module=True, nprocs=1, timeout=30, stdout=out, stderr=io.StringIO()) == 0
    assert out.getvalue().startswith("[rank 0] ")


def test_bad_arguments(tmp_path):
    with pytest.raises(ValueError, match="nprocs"):
        xl.launch("x.py", nprocs=0)
    with pytest.raises(ValueError, match="does not exist"):
        xl.launch(str(tmp_path / "missing.py"))
    with pytest.raises(ValueError, match="timeout"):
        xl.launch(__file__, timeout=-1)
    with pytest.raises(ValueError, match="platform"):
        xl.launch(__file__, platform="tpu")
    with pytest.raises(TypeError, match="sequence"):
        xl.launch(__file__, args="--x")
    assert xl.main([str(tmp_path / "missing.py")]) == 2
    env = xl.rank_env(1, 2, "127.0.0.1:1", 2, "gpu", base={})
    assert env["XFFT_LOCAL_DEVICE_IDS"] == "2,3" and "JAX_PLATFORMS" not in env
    assert "XLA_PYTHON_CLIENT_MEM_FRACTION" not in env
    for bad in (0, True, 1.5):
        with pytest.raises(ValueError, match="ranks_per_gpu"):
            xl.launch(__file__, platform="gpu", ranks_per_gpu=bad)
    with pytest.raises(ValueError, match="ranks_per_gpu=2 needs platform='gpu'"):
        xl.launch(__file__, ranks_per_gpu=2)
    with pytest.raises(ValueError, match="devices_per_process"):
        xl.launch(__file__, platform="gpu", devices_per_process=None, ranks_per_gpu=2)
    assert xl.main(["--ranks-per-gpu", "2", __file__]) == 2  # on the CPU platform
    for bad in (0, "2"):  # rank_env, public too, checks it itself (0 divided the rank before)
        with pytest.raises(ValueError, match="ranks_per_gpu"):
            xl.rank_env(0, 2, "127.0.0.1:1", 1, "gpu", base={}, ranks_per_gpu=bad)


def test_ranks_can_share_a_gpu():
    """``ranks_per_gpu``: consecutive ranks get the same GPUs and a share of their memory (the NCCL path on a
    machine with one GPU; NCCL 2.30 and later allow several ranks per GPU)."""
    envs = [xl.rank_env(r, 4, "127.0.0.1:1", 1, "gpu", base={}, ranks_per_gpu=2) for r in range(4)]
    assert [e["XFFT_LOCAL_DEVICE_IDS"] for e in envs] == ["0", "0", "1", "1"]
    assert {e["XLA_PYTHON_CLIENT_MEM_FRACTION"] for e in envs} == {"0.45"}
    two = [xl.rank_env(r, 3, "127.0.0.1:1", 2, "gpu", base={}, ranks_per_gpu=3)["XFFT_LOCAL_DEVICE_IDS"]
           for r in range(3)]
    assert two == ["0,1"] * 3
    kept = xl.rank_env(1, 2, "127.0.0.1:1", 1, "gpu", base={"XLA_PYTHON_CLIENT_MEM_FRACTION": ".3"},
                       ranks_per_gpu=2)
    assert kept["XLA_PYTHON_CLIENT_MEM_FRACTION"] == ".3"  # the user's choice stands
    grow = xl.rank_env(1, 2, "127.0.0.1:1", 1, "gpu", base={"XLA_PYTHON_CLIENT_PREALLOCATE": "false"},
                       ranks_per_gpu=2)
    assert "XLA_PYTHON_CLIENT_MEM_FRACTION" not in grow  # no preallocation: nothing to share out


def test_python_api_default_streams_follow_sys_stdout_and_stderr(tmp_path, capsys):
    s = _script(tmp_path, "print('out', rank)\nprint('err', rank, file=sys.stderr)\n")
    assert xl.launch(s, nprocs=2, devices_per_process=None, timeout=30) == 0
    cap = capsys.readouterr()
    assert "[rank 1] out 1" in cap.out and "err" not in cap.out
    assert "[rank 1] err 1" in cap.err and "xfft.launch: all 2 ranks exited 0" in cap.err


def _timed_output(cmd: list[str], timeout: float = 60) -> tuple[list[tuple[float, bytes]], float, int]:
    """Run ``cmd`` and record when each chunk of its (merged) output arrives, and when it ends."""
    import select
    import subprocess

    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    chunks, t0 = [], time.monotonic()
    try:
        while time.monotonic() - t0 < timeout:
            if select.select([p.stdout], [], [], 0.5)[0]:
                data = os.read(p.stdout.fileno(), 65536)
                if not data:
                    break
                chunks.append((time.monotonic(), data))
        code = p.wait(timeout=10)
    finally:
        if p.poll() is None:
            p.kill()
    return chunks, time.monotonic(), code


def _arrival(chunks: list[tuple[float, bytes]], text: bytes) -> float:
    seen = b""
    for t, data in chunks:
        seen += data
        if text in seen:
            return t
    raise AssertionError(f"{text!r} never arrived: {seen!r}")


def test_output_passes_through_as_it_comes(tmp_path):
    """A line appears while its rank still runs, and so does a carriage-return progress bar (tqdm)."""
    s = _script(tmp_path, """
        print("first", flush=True)
        sys.stderr.write("\\r 50%|#####     |")
        sys.stderr.flush()
        time.sleep(3)
        sys.stderr.write("\\r100%|##########|\\n")
        sys.stderr.flush()
        time.sleep(0.5)  # a rank's stdout and stderr are two pipes: only a pause orders them for the reader
        print("second")
    """)
    chunks, end, code = _timed_output([sys.executable, "-m", "xfft.launch", "-n", "1", "--timeout", "30", s])
    assert code == 0
    assert end - _arrival(chunks, b"[rank 0] first\n") > 2
    assert end - _arrival(chunks, b"[rank 0]  50%|#####     |") > 2  # the bar before its newline
    out = b"".join(d for _, d in chunks)
    assert b"\r[rank 0] 100%|##########|\n[rank 0] second\n" in out


def test_partial_lines_of_two_ranks_do_not_mix(tmp_path):
    s = _script(tmp_path, """
        if rank == 0:
            print("zero-start ", end="", flush=True)
            time.sleep(1.5)
            print("zero-end", flush=True)
        else:
            time.sleep(0.7)
            print("one", flush=True)
    """)
    r = _cli("-n", "2", "--timeout", "30", s)
    assert r.code == 0, r.out
    assert re.search(r"^\[rank 0\] zero-start \n\[rank 1\] one\n\[rank 0\] zero-end\n", r.out, re.M), r.out


def test_gloo_connection_lines_are_dropped_unless_verbose(tmp_path):
    s = _script(tmp_path, """
        print(f"[Gloo] Rank {rank} is connected to 1 peer ranks. Expected number of connected peer ranks is : 1")
        # Gloo's threads write unsynchronised: two messages can interleave on one line.
        print(f"[Gloo] Rank {rank} is connected to 1 peer ranks. Expected number of connected peer ranks is : "
              f"[Gloo] Rank {rank}1")
        print(" is connected to 1 peer ranks. Expected number of connected peer ranks is : 1")
        print(f"[Gloo] Rank [Gloo] Rank {rank}{rank} is connected to  is connected to 11 peer ranks. "
              "Expected number of connected peer ranks is : 1")
        print("1 peer ranks. Expected number of connected peer ranks is : 1")
        print("[Gloo] something else")
        print("work")
        # A Gloo thread wrote its first piece into the program's own line (seen in CI: "[Gloo] Rank LOADED True").
        print("[Gloo] Rank LOADED True")
        print(f"{rank} is connected to 1 peer ranks. Expected number of connected peer ranks is : 1")
        print("the node is connected to the switch")
    """)
    quiet = _cli("-n", "2", "--timeout", "30", s)
    assert quiet.code == 0 and "peer ranks" not in quiet.out, quiet.out
    assert "[rank 1] [Gloo] something else" in quiet.out and "[rank 1] work" in quiet.out
    assert "[rank 1] LOADED True\n" in quiet.out and "[rank 0] LOADED True\n" in quiet.out, quiet.out
    assert "[rank 1] the node is connected to the switch" in quiet.out  # only Gloo's own pieces go
    loud = _cli("-n", "2", "--timeout", "30", "--verbose", s)
    assert "[rank 1] [Gloo] Rank 1 is connected to 1 peer ranks." in loud.out, loud.out
    env = run([sys.executable, "-m", "xfft.launch", "-n", "1", s], 30, {**os.environ, "XFFT_VERBOSE": "1"})
    assert "[rank 0] [Gloo] Rank 0 is connected" in env.out, env.out


def test_real_two_process_run_prints_no_gloo_lines(tmp_path):
    """Gloo prints its connection lines from C++ on stdout (no log-level switch): the launcher drops them."""
    s = _script(tmp_path, """
        from xfft import distributed as xd
        xd.initialize()
        import jax, jax.numpy as jnp
        x = jax.make_array_from_process_local_data(jax.sharding.NamedSharding(
            jax.make_mesh((2,), ("x",)), jax.sharding.PartitionSpec("x")), jnp.ones(2))
        print("sum", float(jax.jit(jnp.sum)(x)))
    """)
    quiet = _cli("-n", "2", "--timeout", "60", s)
    assert quiet.code == 0 and "[rank 0] sum 4.0" in quiet.out, quiet.out
    assert "[Gloo]" not in quiet.out, quiet.out
    loud = _cli("-n", "2", "--timeout", "60", "--verbose", s)
    assert loud.code == 0 and "[Gloo] Rank" in loud.out, loud.out


def test_native_stdout_split_only_in_a_rank_the_launcher_started(tmp_path, monkeypatch):
    """A rank's own subprocess inherits ``XFFT_NATIVE_STDOUT_FD`` but not the pipe behind it: the split is
    refused unless the launcher is this process's parent and the descriptor is a pipe (nothing is touched)."""
    r, w = os.pipe()
    try:
        with open(tmp_path / "f", "w") as f:
            for value in (f"{w}:{os.getppid() + 1}",  # a pipe, but not from our parent
                          f"{f.fileno()}:{os.getppid()}",  # our parent's number, but a regular file
                          f"{w}", "x:1", ""):
                monkeypatch.setenv(xl.ENV_NATIVE_FD, value)
                stdout = sys.stdout
                assert xl.split_native_stdout() is False and sys.stdout is stdout, value
                assert xl.ENV_NATIVE_FD not in os.environ  # consumed: a second call sees nothing
    finally:
        os.close(r)
        os.close(w)


def test_native_stdout_never_lands_inside_the_programs_lines(tmp_path):
    """Gloo's threads write their message piece by piece on file descriptor 1 while the program prints (a
    rank's line once came out as ``[rank 3] 1LOADED True``, CI 2026-11-24): after ``initialize`` native stdout
    has a pipe of its own, so every printed line arrives whole and Gloo's lines are dropped."""
    s = _script(tmp_path, """
        import threading
        from xfft import distributed as xd
        xd.initialize()
        stop = threading.Event()

        def gloo():  # a C++ thread's ``std::cout << ...``: one write per piece, on file descriptor 1
            while not stop.is_set():
                for piece in ("[Gloo] Rank ", str(rank), " is connected to ", "1", " peer ranks. ",
                              "Expected number of connected peer ranks is : ", "1", "\\n"):
                    os.write(1, piece.encode())

        t = threading.Thread(target=gloo)
        t.start()
        for i in range(400):
            print("line", i, 3 * i, "end")
        stop.set()
        t.join()
        print("native split", os.environ.get("XFFT_NATIVE_STDOUT_FD"), sys.stdout.fileno() != 1)
    """)
    r = _cli("-n", "2", "--timeout", "60", s)
    assert r.code == 0, r.out[-3000:]
    for rank in range(2):
        got = re.findall(rf"^\[rank {rank}\] line .*$", r.out, re.M)
        assert got == [f"[rank {rank}] line {i} {3 * i} end" for i in range(400)], [
            g for g in got if not re.fullmatch(r"\[rank \d\] line (\d+) (\d+) end", g)][:5]
        assert f"[rank {rank}] native split None True" in r.out, r.out[-2000:]
    assert "Gloo" not in r.out and "peer ranks" not in r.out, r.out[-2000:]
