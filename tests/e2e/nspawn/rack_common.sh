# Sourced by each rack script after common.sh. nspawn/machines.rs boots
# the nodes of a rack at once, each running the same script; /out/node.env
# says which node this is (NODE_INDEX from 1, NODE_COUNT, NODE_NAME, the
# hostname), its addresses (NODE_ADDR on the rack network RACK_CIDR,
# NODE_OTHER_ADDR on OTHER_CIDR, another network on the same link) and the
# rack's (RACK_NAMES, RACK_ADDRS, OTHER_ADDRS: space-separated, in node
# order). /rack is one folder shared by every node, for their rendezvous. A
# node whose script fails powers the others off (the host sees to it), so
# the waits here are only bounded, never told of a failure elsewhere.
# Here: those facts checked, the IMEX stand-ins where NVIDIA's packages put
# the real ones, the helpers, and the journal saved as /out/journal at the
# end (machines.rs shows its tail for a node that failed).
. /out/node.env
# The node's whole journal, for the host's report of a node that failed;
# also when the host powers the node off (SIGTERM) because another failed.
rack_journal() { journalctl -b --no-pager -o short-monotonic >/out/journal 2>&1 || true; }
trap rack_journal EXIT
trap 'exit 143' TERM

step "node $NODE_NAME ($NODE_INDEX of $NODE_COUNT): $NODE_ADDR on the rack network $RACK_CIDR, $NODE_OTHER_ADDR on $OTHER_CIDR"
[ "$(hostname)" = "$NODE_NAME" ] || fail "the hostname is $(hostname), not $NODE_NAME"
hostname -I | tr ' ' '\n' | grep -qx "$NODE_ADDR" || fail "$NODE_ADDR is not an address of this node: $(hostname -I)"
install -m 0755 /out/fake-nvidia-imex /usr/bin/nvidia-imex
install -m 0755 /out/fake-nvidia-imex-ctl /usr/bin/nvidia-imex-ctl
install -m 0755 /out/fake-imex-workload "$STAND_INS/"

# The NVLink clique of every node's GPUs (the simulator's for a rack).
CLIQUE=4f3c2b1a-5d6e-4f70-8a9b-0c1d2e3f4a5b.1
# rack_config FILE: the driver root copied to /opt/gpuslice-sim and
# gpusliced's config FILE (sim_config_file) for a simulated
# p6e-gb200.36xlarge seeded with the node's name, its IMEX daemons the
# stand-ins, bound to NODE_ADDR, the rack network RACK_CIDR.
rack_config() {
	cp -a /out/sim-root /opt/gpuslice-sim
	sim_config_file "$1" "instance = \"p6e-gb200.36xlarge\"
seed = \"$NODE_NAME\""
	cat >>"$1" <<EOF
[imex]
program = "/usr/bin/nvidia-imex"
ctl_program = "/usr/bin/nvidia-imex-ctl"
bind_address = "$NODE_ADDR"
rack_network = ["$RACK_CIDR"]
EOF
}

# rack_mark NAME: this node has reached NAME.
rack_mark() { touch "/rack/$NODE_NAME.$1"; }
# rack_wait NAME [SECONDS]: waits until every node has reached NAME (bounded,
# 60 s by default).
rack_wait() { rack_wait_for "$RACK_NAMES" "$@"; }
# rack_wait_for NODES NAME [SECONDS]: the same for some nodes (names,
# space-separated).
rack_wait_for() {
	local node
	for node in $1; do
		timeout "${3:-60}" sh -c "until [ -e '/rack/$node.$2' ]; do sleep 0.1; done" \
			|| fail "$node did not reach '$2' within ${3:-60} s"
	done
}
# The other nodes' addresses: peers on the rack network, other_peers on the other.
peers() { echo "$RACK_ADDRS" | tr ' ' '\n' | grep -vx "$NODE_ADDR"; }
other_peers() { echo "$OTHER_ADDRS" | tr ' ' '\n' | grep -vx "$NODE_OTHER_ADDR"; }

# The probe, a program so it runs the same in a shell or a unit:
#   rack-probe serve PORT [ADDR [LOG]]
#                                answers each TCP connection with the hostname,
#                                on ADDR (default every address); with LOG,
#                                appends "accepted <peer address>" there for each
#   rack-probe tcp ADDR PORT [SOURCE]
#                                "tcp ADDR connected NAME" (exit 0) or "tcp ADDR failed: WHY" (exit 1), 2 s;
#                                from the address SOURCE when given
#   rack-probe udp ADDR PORT     "udp ADDR sent" (exit 0) or "udp ADDR failed: WHY" (exit 1)
# (systemd's IP firewall drops a refused TCP SYN, so a refused connect times
# out; a refused UDP send fails at once with EPERM.)
RACK_PORT=7000
cat >/usr/local/bin/rack-probe <<'EOF'
#!/usr/bin/python3
import os, socket, sys
what, args = sys.argv[1], sys.argv[2:]
if what == "serve":
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((args[1] if len(args) > 1 else "0.0.0.0", int(args[0])))
    s.listen()
    # Listening: tell systemd (a Type=notify unit's start ends here).
    notify = os.environ.get("NOTIFY_SOCKET")
    if notify:
        path = "\0" + notify[1:] if notify.startswith("@") else notify
        socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM).sendto(b"READY=1", path)
    while True:
        c, peer = s.accept()
        if len(args) > 2:
            with open(args[2], "a") as log:
                log.write("accepted %s\n" % peer[0])
        c.sendall(socket.gethostname().encode())
        c.close()
addr, port = args[0], int(args[1])
try:
    if what == "tcp":
        source = (args[2], 0) if len(args) > 2 else None
        with socket.create_connection((addr, port), timeout=2, source_address=source) as c:
            print("tcp", addr, "connected", c.recv(100).decode())
    else:
        socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"x", (addr, port))
        print("udp", addr, "sent")
except OSError as e:
    print(what, addr, "failed:", e)
    sys.exit(1)
EOF
chmod 0755 /usr/local/bin/rack-probe
# rack_listen: the probe's listener as a unit, rack-hello.service, started
# once it listens (Type=notify: systemd-run returns when it says READY), so a
# peer told "listening" is never refused.
rack_listen() {
	systemd-run --quiet --unit=rack-hello -p Type=notify -p NotifyAccess=main \
		/usr/local/bin/rack-probe serve "$RACK_PORT"
}
