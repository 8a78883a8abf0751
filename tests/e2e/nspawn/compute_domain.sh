#!/bin/sh
# Runs on every node of a rack of three at once (nspawn/domain.rs): a
# ComputeDomain formed by gpusliced under the shipped units. Each node is a
# simulated p6e-gb200.36xlarge with the .deb, its config in
# /etc/gpuslice/gpuslice.toml, gpusliced.service exactly as packaged (no
# drop-in) and the IMEX stand-ins at /usr/bin/nvidia-imex{,-ctl}, where the
# shipped gpuslice-imex@.service runs them. gpusliced starts the domain's
# daemon as gpuslice-imex@<uid>.service over D-Bus ([imex] supervisor
# "auto"); the daemons talk real TCP over the rack network, under the
# unit's IP firewall. common.sh and rack_common.sh (sourced first) say what
# /out, /out/node.env and /rack hold.
#
# The story, the nodes meeting at marks in /rack:
#   node-1, node-2: a channel claim each, prepared; their units active with
#     the rack network allowed; told each other as members; connected, READY;
#   node-1 exports a handle, a workload on node-2 imports it and holds it;
#   node-3 joins (prepared, then every node told 0,1,2): no daemon restarts,
#     the import holds, all three connected;
#   node-1: `systemctl restart gpusliced`: its daemon's unit keeps its
#     MainPID and InvocationID, the domain stays connected, the import holds;
#   node-1: an address outside IPAddressAllow (node-3's on the other
#     network) written into the domain's hosts file for node-3's index, the
#     unit signalled: its daemon tries (SYN_SENT), nothing arrives, its row
#     shows node-3 not connected, while the same connection from node-1's
#     own shell (same source address) answers; the members told again, it
#     connects again;
#   every node unprepares, node-1 first: the units stop and are gone, their
#     runtime IPAddressAllow with them, the folders removed; the workload on
#     node-2 ends with CUDA's "invalid resource handle" (its exporter gone).
. /out/common.sh
. /out/rack_common.sh

DOMAIN_UID=7d0c3a1e-9f4b-4c2d-8e6a-5b1f2c3d4e5f
DOMAIN_NAME=rack-domain
NAMESPACE=train
CLAIM_UID=3c1d2e4f-0a5b-4c6d-9e7f-8a9b0c1d2e0$NODE_INDEX
CHANNEL_CONFIG='{"apiVersion":"resource.nvidia.com/v1beta1","kind":"ComputeDomainChannelConfig","domainID":"'$DOMAIN_UID'"}'
UNIT="gpuslice-imex@$DOMAIN_UID.service"
FOLDER="/run/gpuslice/imex/$DOMAIN_UID"
CTL="nvidia-imex-ctl -c $FOLDER/imexd.cfg"
DROP_IN="/run/systemd/system.control/$UNIT.d"
# The three nodes' rack addresses, and node-3's on the other network.
A1=$(echo "$RACK_ADDRS" | cut -d' ' -f1)
A2=$(echo "$RACK_ADDRS" | cut -d' ' -f2)
A3=$(echo "$RACK_ADDRS" | cut -d' ' -f3)
OUTSIDE3=$(echo "$OTHER_ADDRS" | cut -d' ' -f3)
# The port IMEX's peers use (SERVER_PORT in the config gpusliced writes).
PEER_PORT=50000
WORKLOAD=
STARTED=$(date +%s%N)

[ "$NODE_COUNT" = 3 ] || fail "compute_domain.sh runs on three nodes, not $NODE_COUNT"
# The elapsed seconds since the script started, in each step's title.
dstep() { step "[$(( ($(date +%s%N) - STARTED) / 1000000 )) ms] $*"; }
fail_more() {
	echo "-- $UNIT:"
	systemctl status "$UNIT" --no-pager || true
	journalctl -b --no-pager -u "$UNIT" | tail -n 40 || true
	echo "-- gpuslicectl domains; nvidia-imex-ctl -N; the hosts file:"
	gpuslicectl domains || true
	$CTL -N || true
	cat "$FOLDER/hosts" 2>/dev/null | grep -v '^127.0.0.2' || true
	if [ -n "$WORKLOAD" ]; then
		echo "-- the workload:"
		cat /run/workload.out /run/workload.err 2>/dev/null || true
	fi
}

# domain_is EXPR: whether this node's entry of the domain in `gpuslicectl
# domains --output json` makes the Python expression EXPR (over d) true.
domain_is() {
	gpuslicectl domains --output json 2>/dev/null | python3 -c '
import json, sys
ds = [d for d in json.load(sys.stdin)["domains"] if d["domain"] == sys.argv[1]]
sys.exit(0 if ds and eval(sys.argv[2], {"d": ds[0]}) else 1)' "$DOMAIN_UID" "$1"
}
# wait_domain EXPR WHAT [SECONDS]: waits (bounded, 30 s by default) until
# domain_is EXPR, or fails saying WHAT did not happen.
wait_domain() {
	local tries=0
	until domain_is "$1"; do
		tries=$((tries + 1))
		[ "$tries" -lt $((${3:-30} * 5)) ] || fail "$2 within ${3:-30} s"
		sleep 0.2
	done
}
# settled N: READY, knowing its N members, connected to every other.
settled() {
	echo "d['ready'] and d['members_known'] and d['connected'] and len(d['members']) == $1 and d['daemon_state'] == 'running'"
}
# The three members, as the plugin would tell them from the status.
MEMBERS2="0=$A1 1=$A2"
MEMBERS3="0=$A1 1=$A2 2=$A3"
# Whether the process PID runs (an ended child of this shell is a zombie
# until waited for, which kill -0 would take for running).
alive() { [ -r "/proc/$1/stat" ] && [ "$(cut -d' ' -f3 "/proc/$1/stat")" != Z ]; }

dstep "a simulated p6e-gb200.36xlarge: /etc/gpuslice/gpuslice.toml, the shipped units as packaged, dpkg -i"
# common.sh's drop-in points gpusliced at sim.toml: not here, the unit runs as shipped.
rm -r /etc/systemd/system/gpusliced.service.d
systemctl daemon-reload
rack_config /etc/gpuslice/gpuslice.toml
# The config is ours: the packaged one goes beside it as .dpkg-dist.
dpkg -i --force-confold /out/gpuslice.deb
[ "$(show ActiveState)/$(show SubState)" = active/running ] || fail "gpusliced is not active/running after install"
[ -z "$(show DropInPaths)" ] || fail "gpusliced.service has drop-ins: $(show DropInPaths)"
show ExecStart | grep -q 'argv\[\]=/usr/bin/gpusliced --config /etc/gpuslice/gpuslice.toml ' \
	|| fail "gpusliced does not run the packaged command line: $(show ExecStart)"
[ "$(show RestrictAddressFamilies)" = AF_UNIX ] || fail "gpusliced's unit is not AF_UNIX-only: $(show RestrictAddressFamilies)"
journal_has "IMEX daemons run as instances of gpuslice-imex@.service" \
	|| fail "gpusliced does not run IMEX daemons as instances of gpuslice-imex@.service"
gpuslicectl domains
gpuslicectl domains | grep -qx "clique: $CLIQUE" || fail "not the clique $CLIQUE"
# Where node-3's address outside the rack is asked for in the sandbox step:
# a listener there on IMEX's port, noting who connects (read through /rack).
# Type=notify: systemd-run returns once it listens.
systemd-run --quiet --unit=rack-outside -p Type=notify -p NotifyAccess=main \
	/usr/local/bin/rack-probe serve "$PEER_PORT" "$NODE_OTHER_ADDR" "/rack/$NODE_NAME.outside-accepted"
rack_mark installed
rack_wait installed 120

# The checks of a node whose daemon gpusliced just started.
unit_started() {
	local pid
	[ "$(ushow "$UNIT" ActiveState)/$(ushow "$UNIT" SubState)" = active/running ] \
		|| fail "$UNIT is $(ushow "$UNIT" ActiveState)/$(ushow "$UNIT" SubState)"
	ushow "$UNIT" ExecStart | grep -q "argv\[\]=/usr/bin/nvidia-imex -c $FOLDER/imexd.cfg " \
		|| fail "$UNIT runs $(ushow "$UNIT" ExecStart)"
	# The rack, and the loopback address unheld indices' names point to
	# (refused there at once, not dropped).
	same_words "$(ushow "$UNIT" IPAddressAllow | sed 's|127.0.0.2/32|127.0.0.2|')" "$RACK_CIDR 127.0.0.2" \
		|| fail "$UNIT's IPAddressAllow is '$(ushow "$UNIT" IPAddressAllow)', not the rack network $RACK_CIDR and 127.0.0.2"
	same_words "$(ushow "$UNIT" IPAddressDeny)" "0.0.0.0/0 ::/0" \
		|| fail "$UNIT's IPAddressDeny is '$(ushow "$UNIT" IPAddressDeny)'"
	same_words "$(ushow "$UNIT" RestrictAddressFamilies)" "AF_UNIX AF_INET AF_INET6" \
		|| fail "$UNIT's address families: $(ushow "$UNIT" RestrictAddressFamilies)"
	grep -qx "IPAddressAllow=$RACK_CIDR" "$DROP_IN/50-IPAddressAllow.conf" \
		|| fail "no runtime IPAddressAllow drop-in in $DROP_IN"
	pid=$(ushow "$UNIT" MainPID)
	grep -q "^0::/.*/$UNIT\$" "/proc/$pid/cgroup" \
		|| fail "the daemon (pid $pid) is not in its unit's cgroup: $(cat "/proc/$pid/cgroup")"
	cmp "$FOLDER/hosts" "/proc/$pid/root/etc/hosts" || fail "the daemon's /etc/hosts is not the domain's mapping"
	journal_has "fake-nvidia-imex: start bind=$NODE_ADDR " "$UNIT" \
		|| fail "the daemon's own output is not in its unit's journal"
	[ "$(show RestrictAddressFamilies)" = AF_UNIX ] || fail "gpusliced's unit is no longer AF_UNIX-only"
}
prepare() {
	gpuslicectl prepare --driver compute-domain.nvidia.com --compute-domain "$DOMAIN_NAME" \
		--uid "$CLAIM_UID" --namespace "$NAMESPACE" --name "worker-$NODE_INDEX" \
		--device channel-0 --request channel --config "$CHANNEL_CONFIG" \
		|| fail "the channel claim was not prepared"
}
members() {
	local out
	out=$(gpuslicectl domains members "$DOMAIN_UID" "$@") || fail "domains members $*: $out"
	echo "$out"
	echo "$out" | grep -q "members changed" || fail "domains members $*: nothing changed"
	! echo "$out" | grep -q "^skipped" || fail "domains members $*: a member skipped"
}
# same_words A B: whether A and B hold the same words, in any order (systemd
# shows sets in its own order).
same_words() { [ "$(echo $1 | tr ' ' '\n' | sort)" = "$(echo $2 | tr ' ' '\n' | sort)" ]; }
# The unit's MainPID, InvocationID and NRestarts, one line.
identity() { echo "$(ushow "$UNIT" MainPID) $(ushow "$UNIT" InvocationID) $(ushow "$UNIT" NRestarts)"; }

if [ "$NODE_INDEX" != 3 ]; then
	dstep "a channel claim prepared: gpusliced starts $UNIT over D-Bus"
	prepare
	unit_started
	systemctl show -p MainPID,IPAddressAllow,IPAddressDeny "$UNIT"
	journalctl -b --no-pager -u "$UNIT"
	rack_mark prepared
	rack_wait_for "node-1 node-2" prepared

	dstep "told the two members (what the plugin does from the status): READY, connected"
	members $MEMBERS2
	wait_domain "$(settled 2)" "the domain of node-1 and node-2 is not READY and connected"
	gpuslicectl domains
	$CTL -N
	FIRST=$(identity)
	[ "${FIRST##* }" = 0 ] || fail "$UNIT restarted: $FIRST"
	rack_mark pair
	rack_wait_for "node-1 node-2" pair

	if [ "$NODE_INDEX" = 1 ]; then
		dstep "node-1 exports a handle"
		"$STAND_INS/fake-imex-workload" -c "$FOLDER/imexd.cfg" export weights
		rack_mark exported
	else
		rack_wait_for node-1 exported
		dstep "a workload on node-2 imports node-1's export and holds it"
		"$STAND_INS/fake-imex-workload" -c "$FOLDER/imexd.cfg" import compute-domain-daemon-0000 weights \
			>/run/workload.out 2>/run/workload.err &
		WORKLOAD=$!
		timeout 10 sh -c 'until grep -q "^imported weights from compute-domain-daemon-0000" /run/workload.out; do sleep 0.1; done' \
			|| fail "the workload did not import node-1's export"
		cat /run/workload.out
		rack_mark imported
	fi
	rack_wait_for node-2 imported
	rack_wait_for node-3 prepared 60
else
	rack_wait_for node-2 imported 120
	dstep "node-3 joins: its channel claim prepared (a stale runtime IPAddressAllow=$OTHER_CIDR on its unit replaced)"
	# What a gpusliced killed before it reverted its unit, with another
	# rack_network then, would leave: gpusliced's start must replace it.
	systemctl set-property --runtime "$UNIT" "IPAddressAllow=$OTHER_CIDR"
	grep -qx "IPAddressAllow=$OTHER_CIDR" "$DROP_IN/50-IPAddressAllow.conf" || fail "no stale drop-in planted"
	prepare
	unit_started
	FIRST=$(identity)
	rack_mark prepared
fi

dstep "every node told the three members: no daemon restarts, the import holds, all connected"
members $MEMBERS3
wait_domain "$(settled 3)" "the domain of three is not READY and connected on $NODE_NAME" 45
gpuslicectl domains
asked=$(date +%s%N)
$CTL -N
echo "(nvidia-imex-ctl -N answered in $(( ($(date +%s%N) - asked) / 1000000 )) ms)"
[ "$(identity)" = "$FIRST" ] || fail "$UNIT restarted: $FIRST, now $(identity)"
if [ "$NODE_INDEX" != 3 ]; then
	journal_has "IMEX daemon told its members (SIGUSR1)" || fail "gpusliced did not signal its daemon"
	journal_has "fake-nvidia-imex: usr1 resolved compute-domain-daemon-0000=$A1 compute-domain-daemon-0001=$A2 compute-domain-daemon-0002=$A3 " "$UNIT" \
		|| fail "the daemon did not re-resolve its members"
fi
if [ -n "$WORKLOAD" ]; then
	alive "$WORKLOAD" || fail "the import was lost when node-3 joined: $(cat /run/workload.err)"
fi
rack_mark trio
rack_wait trio

if [ "$NODE_INDEX" = 1 ]; then
	dstep "systemctl restart gpusliced: its IMEX daemon's unit runs on, taken over"
	before=$(show MainPID)
	systemctl restart gpusliced
	[ "$(show ActiveState)/$(show SubState)" = active/running ] || fail "gpusliced is not active/running after its restart"
	[ "$(show MainPID)" != "$before" ] || fail "gpusliced did not restart"
	[ "$(identity)" = "$FIRST" ] || fail "$UNIT restarted with gpusliced: $FIRST, now $(identity)"
	journal_has "took over a running IMEX daemon" || fail "gpusliced did not take its IMEX daemon over"
	# Right after: a daemon that started before the mapping's last write
	# may have missed a signal, so it gets one (SPACING after the takeover).
	gpuslicectl domains | tail -n 2
	wait_domain "$(settled 3)" "the domain is not READY and connected after gpusliced's restart"
	gpuslicectl domains
	[ "$(identity)" = "$FIRST" ] || fail "$UNIT restarted: $FIRST, now $(identity)"
	rack_mark restarted
else
	rack_wait_for node-1 restarted 60
fi
if [ -n "$WORKLOAD" ]; then
	alive "$WORKLOAD" || fail "the import was lost when node-1's gpusliced restarted: $(cat /run/workload.err)"
fi

if [ "$NODE_INDEX" = 1 ]; then
	dstep "an address outside IPAddressAllow: node-3's index mapped to $OUTSIDE3 (the other network), in place"
	cp "$FOLDER/hosts" /run/hosts.told
	inode=$(stat -c %i "$FOLDER/hosts")
	sed "s/^$A3\tcompute-domain-daemon-0002\$/$OUTSIDE3\tcompute-domain-daemon-0002/" /run/hosts.told >/run/hosts.outside
	! cmp -s /run/hosts.told /run/hosts.outside || fail "no line maps compute-domain-daemon-0002 to $A3"
	cat /run/hosts.outside >"$FOLDER/hosts"
	[ "$(stat -c %i "$FOLDER/hosts")" = "$inode" ] || fail "the hosts file was replaced, not rewritten in place"
	pid=$(ushow "$UNIT" MainPID)
	grep -q "^$OUTSIDE3	compute-domain-daemon-0002\$" "/proc/$pid/root/etc/hosts" \
		|| fail "the daemon's /etc/hosts does not show the rewrite"
	# SIGUSR1 as gpusliced sends it; the daemon takes one per 5 s, so again
	# until it says it resolved the new address.
	told=
	for _ in $(seq 12); do
		systemctl kill -s USR1 --kill-whom=main "$UNIT"
		sleep 1
		if journalctl -b --no-pager -u "$UNIT" | grep -q "usr1 resolved .*compute-domain-daemon-0002=$OUTSIDE3 "; then
			told=yes
			break
		fi
	done
	[ -n "$told" ] || fail "the daemon did not re-resolve compute-domain-daemon-0002 to $OUTSIDE3"
	journalctl -b --no-pager -u "$UNIT" | grep "usr1 resolved .*compute-domain-daemon-0002=$OUTSIDE3 " | tail -n 1

	dstep "the daemon tries $OUTSIDE3:$PEER_PORT from $A1 and its sandbox drops it"
	# Its connection attempt, in the node's (shared) network namespace: a SYN
	# sent and never answered (TCP state 02, SYN_SENT).
	python3 - "$A1" "$OUTSIDE3" "$PEER_PORT" <<'EOF' || fail "no connection attempt of the daemon to $OUTSIDE3 seen"
import socket, struct, sys, time
hexed = lambda a, p: "%08X:%04X" % (struct.unpack("<I", socket.inet_aton(a))[0], p)
want = (hexed(sys.argv[1], 0)[:8], hexed(sys.argv[2], int(sys.argv[3])))
for _ in range(100):
    for line in open("/proc/net/tcp").readlines()[1:]:
        f = line.split()
        if f[1][:8] == want[0] and f[2] == want[1] and f[3] == "02":
            print("SYN_SENT %s -> %s:%s (the daemon's attempt)" % tuple(sys.argv[1:4]))
            sys.exit(0)
    time.sleep(0.05)
sys.exit(1)
EOF
	wait_domain "not d['connected'] and 'compute-domain-daemon-0002' in d['not_connected'] and 'compute-domain-daemon-0001' not in d['not_connected']" \
		"node-1's row does not show node-3 (at $OUTSIDE3) not connected"
	gpuslicectl domains
	$CTL -N
	accepted=/rack/node-3.outside-accepted
	! grep -qx "accepted $A1" "$accepted" 2>/dev/null || fail "a connection from $A1 reached $OUTSIDE3 through the sandbox"
	echo "node-3's listener on $OUTSIDE3:$PEER_PORT saw nothing from $A1"
	# The same connection, same source address, from outside the sandbox.
	out=$(rack-probe tcp "$OUTSIDE3" "$PEER_PORT" "$A1") || fail "$OUTSIDE3:$PEER_PORT does not answer outside the sandbox either: $out"
	echo "outside the sandbox, from $A1: $out"
	[ "$(grep -cx "accepted $A1" "$accepted")" = 1 ] || fail "node-3's listener did not see the connection from $A1"
	[ "$(identity)" = "$FIRST" ] || fail "$UNIT restarted: $FIRST, now $(identity)"

	dstep "the members told again: gpusliced rewrites the mapping, the daemon connects again"
	members $MEMBERS3
	cmp "$FOLDER/hosts" /run/hosts.told || fail "the mapping is not the one told"
	wait_domain "$(settled 3)" "the domain is not connected again after the members were told" 60
	gpuslicectl domains
	[ "$(identity)" = "$FIRST" ] || fail "$UNIT restarted: $FIRST, now $(identity)"
	rack_mark sandboxed
else
	rack_wait_for node-1 sandboxed 120
fi
if [ -n "$WORKLOAD" ]; then
	alive "$WORKLOAD" || fail "the import was lost: $(cat /run/workload.err)"
	dstep "the import held throughout: $(cat /run/workload.out)"
fi
rack_mark held
rack_wait held

# The checks of a node whose last channel claim is gone.
imex_units() { systemctl list-units --all --plain --no-legend 'gpuslice-imex@*'; }
unit_gone() {
	# systemd unloads a stopped unit nothing refers to soon after, not at once.
	for _ in $(seq 50); do [ -n "$(imex_units)" ] || break; sleep 0.1; done
	[ -z "$(imex_units)" ] || fail "an IMEX unit is still loaded 5 s after the unprepare: $(imex_units)"
	[ "$(ushow "$UNIT" ActiveState)" = inactive ] || fail "$UNIT is $(ushow "$UNIT" ActiveState)"
	[ ! -e "$DROP_IN" ] || fail "the runtime drop-in $DROP_IN is still there"
	[ -z "$(ushow "$UNIT" IPAddressAllow)" ] || fail "$UNIT still allows $(ushow "$UNIT" IPAddressAllow)"
	[ ! -e "$FOLDER" ] || fail "the domain's folder $FOLDER is still there"
	[ -z "$(find /var/run/cdi -name "*$CLAIM_UID*")" ] || fail "the claim's CDI spec is still there"
	gpuslicectl domains | grep -qx "no ComputeDomain has a channel prepared on this node" \
		|| fail "gpuslicectl domains still shows a domain"
	journalctl -b --no-pager -u "$UNIT" | grep -q "Stopped " || fail "$UNIT's journal does not show it stopped"
}
unprepare() {
	gpuslicectl unprepare --driver compute-domain.nvidia.com --uid "$CLAIM_UID" \
		|| fail "the channel claim was not unprepared"
}
if [ "$NODE_INDEX" = 1 ]; then
	dstep "node-1 unprepares first: its unit stops and goes, with its IPAddressAllow and folder"
	unprepare
	unit_gone
	rack_mark unprepared
else
	rack_wait_for node-1 unprepared
fi
if [ -n "$WORKLOAD" ]; then
	dstep "node-2's workload ends: its exporter is gone"
	for _ in $(seq 100); do alive "$WORKLOAD" || break; sleep 0.1; done
	! alive "$WORKLOAD" || fail "the workload still holds an import of a daemon that stopped"
	status=0
	wait "$WORKLOAD" || status=$?
	cat /run/workload.err
	[ "$status" = 1 ] || fail "the workload ended with status $status, not 1"
	grep -qx "lost weights: invalid resource handle" /run/workload.err || fail "the workload did not see its import lost"
	WORKLOAD=
fi
if [ "$NODE_INDEX" != 1 ]; then
	dstep "$NODE_NAME unprepares: its unit stops and goes, with its IPAddressAllow and folder"
	unprepare
	unit_gone
fi
journalctl -b --no-pager -u "$UNIT" | tail -n 5

dstep "the rack is done"
rack_mark finished
rack_wait finished
echo PASS
