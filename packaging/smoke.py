#!/usr/bin/env python3
"""Smoke test of one architecture's packaged binaries (packaging/check.sh).

    packaging/smoke.py [--instance TYPE:GPUS] BIN_DIR [RUNNER...]

BIN_DIR holds gpusliced, gpuslicectl and gpuslice-dra-plugin as packaged;
RUNNER is the command that runs them (none for the host's own architecture,
`qemu-aarch64 -L /usr/aarch64-linux-gnu` for arm64 on an amd64 host).

Each binary answers --version; gpusliced starts on the sim backend (two
simulated H100s, or with --instance the simulated instance type TYPE and its
GPUS GPUs; every path in a temp folder) and says READY=1 on its
NOTIFY_SOCKET, read as systemd reads it; `gpuslicectl --output json status`
answers over the socket with the sim backend and every GPU; with --instance,
`gpuslicectl --output json gpus` lists them, and on an instance of a
multi-node NVLink domain (p6e-gb200, arm64) each carries its fabric clique;
SIGTERM stops the daemon with exit status 0. Nothing sleeps: every wait is on
the notify socket or the process, bounded by TIMEOUT (emulation is slow).
"""

import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time

TIMEOUT = 120.0
BINARIES = ("gpusliced", "gpuslicectl", "gpuslice-dra-plugin")
# The node: two simulated H100s, or (instance type, GPU count) with --instance.
NODE = {"instance": None, "gpus": 2}


def fail(msg):
    sys.exit(f"smoke.py: FAIL: {msg}")


def config(folder):
    """A sim config with every path in `folder`, as the e2e harness writes it."""
    dev = os.path.join(folder, "root", "dev")
    os.makedirs(dev)
    for node in [f"nvidia{i}" for i in range(NODE["gpus"])] + ["nvidiactl", "nvidia-uvm"]:
        os.symlink("/dev/null", os.path.join(dev, node))
    if NODE["instance"]:
        gpus = f'instance = "{NODE["instance"]}"'
    else:
        gpus = "gpus = [" + ", ".join(['"H100-80GB"'] * NODE["gpus"]) + "]"
    path = os.path.join(folder, "gpuslice.toml")
    with open(path, "w", encoding="utf-8") as f:
        f.write(
            'socket = "gpusliced.sock"\nstate_dir = "state"\ncdi_dir = "cdi"\n'
            f'driver_root = "root"\n[backend]\nkind = "sim"\n[backend.sim]\n{gpus}\n'
        )
    return path


def wait_ready(notify, daemon):
    """Reads notify messages until READY=1; fails if the daemon exits first."""
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        # Short timeouts only to notice a daemon that died without a word.
        notify.settimeout(1.0)
        try:
            msg = notify.recv(4096).decode("utf-8", "replace")
        except socket.timeout:
            if daemon.poll() is not None:
                fail(f"gpusliced exited with {daemon.returncode} before READY=1")
            continue
        if "READY=1" in msg.split("\n"):
            return
    fail(f"no READY=1 from gpusliced within {TIMEOUT:.0f} s")


def status(runner, bin_dir, sock):
    out = subprocess.run(
        runner + [os.path.join(bin_dir, "gpuslicectl"), "--socket", sock, "--output", "json", "status"],
        capture_output=True, text=True, timeout=TIMEOUT, check=False,
    )
    # 3: it answered and lists a problem (this sim node has no driver libraries).
    if out.returncode not in (0, 3):
        fail(f"gpuslicectl status exited with {out.returncode}: {out.stderr}")
    doc = json.loads(out.stdout)
    if (out.returncode == 3) != bool(doc.get("problems") or doc.get("warnings")):
        fail(f"gpuslicectl status exited with {out.returncode} for {doc}")
    if doc.get("backend") != "sim" or doc.get("gpu_count") != NODE["gpus"]:
        fail(f"gpuslicectl status: want backend sim and {NODE['gpus']} GPUs, got {doc}")
    return doc


def gpus(runner, bin_dir, sock):
    """`gpuslicectl gpus` on an instance: every GPU, each with its clique on a
    multi-node NVLink instance. Returns a line for the log."""
    out = subprocess.run(
        runner + [os.path.join(bin_dir, "gpuslicectl"), "--socket", sock, "--output", "json", "gpus"],
        capture_output=True, text=True, timeout=TIMEOUT, check=False,
    )
    if out.returncode != 0:
        fail(f"gpuslicectl gpus exited with {out.returncode}: {out.stderr}")
    listed = json.loads(out.stdout)["gpus"]
    if len(listed) != NODE["gpus"]:
        fail(f"gpuslicectl gpus: want {NODE['gpus']} GPUs, got {listed}")
    products = sorted({g["product"] for g in listed})
    cliques = sorted({g["clique"] for g in listed})
    if NODE["instance"].startswith("p6e-gb200") and (len(cliques) != 1 or not cliques[0]):
        fail(f"gpuslicectl gpus: want one clique on every GB200, got {cliques}")
    return f"{NODE['instance']}: {len(listed)} x {', '.join(products)}, clique {cliques[0] or '-'}"


def daemon_run(runner, bin_dir, folder):
    notify_path = os.path.join(folder, "notify")
    notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    notify.bind(notify_path)
    env = dict(os.environ, NOTIFY_SOCKET=notify_path)
    started = time.monotonic()
    daemon = subprocess.Popen(
        runner + [os.path.join(bin_dir, "gpusliced"), "--config", config(folder)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )
    try:
        wait_ready(notify, daemon)
        ready = time.monotonic() - started
        sock = os.path.join(folder, "gpusliced.sock")
        doc = status(runner, bin_dir, sock)
        shape = gpus(runner, bin_dir, sock) if NODE["instance"] else None
        daemon.send_signal(signal.SIGTERM)
        code = daemon.wait(timeout=TIMEOUT)
        if code != 0:
            fail(f"gpusliced exited with {code} after SIGTERM: {daemon.stderr.read()}")
        print(f"gpusliced: READY=1 after {ready:.1f} s; status: {doc['version']}, "
              f"backend {doc['backend']}, {doc['gpu_count']} GPUs; SIGTERM: exit 0")
        if shape:
            print(f"gpuslicectl gpus: {shape}")
    finally:
        if daemon.poll() is None:
            daemon.kill()
            daemon.wait()
        notify.close()


def main():
    args = sys.argv[1:]
    if args[:1] == ["--instance"] and len(args) >= 2:
        name, _, count = args[1].partition(":")
        if not count.isdigit():
            sys.exit(f"--instance wants TYPE:GPUS, e.g. p6e-gb200.36xlarge:4, not {args[1]!r}")
        NODE["instance"], NODE["gpus"] = name, int(count)
        args = args[2:]
    if not args:
        sys.exit(__doc__)
    bin_dir, runner = args[0], args[1:]
    for name in BINARIES:
        out = subprocess.run(runner + [os.path.join(bin_dir, name), "--version"],
                             capture_output=True, text=True, timeout=TIMEOUT, check=False)
        # "<name> 0.1.0 (1a8ab5c)": its own name and the commit it was built from.
        version = re.escape(name) + r" \d+\.\d+\.\d+\S* \(([0-9a-f]{7,}|unknown)\)\n"
        if out.returncode != 0 or not re.fullmatch(version, out.stdout):
            fail(f"{name} --version: exit {out.returncode}, stdout {out.stdout!r}, stderr {out.stderr!r}")
        print(f"{name} --version: {out.stdout.strip()}")
    with tempfile.TemporaryDirectory(prefix="gpuslice-smoke-") as folder:
        daemon_run(runner, bin_dir, folder)


if __name__ == "__main__":
    main()
