#!/bin/sh
# Runs on every node of a rack at once (nspawn/rack.rs; machines.rs boots
# them): a simulated GB200 node with the gpuslice .deb, then the rack's
# network and systemd's IP sandbox checked between the nodes. The
# groundwork the ComputeDomain tests of issue 37 build on; it does not use
# gpusliced's IMEX units (it runs the stand-ins under a transient unit of
# the same sandbox). common.sh and rack_common.sh (sourced first) say what
# /out, /out/node.env and /rack hold.
. /out/common.sh
. /out/rack_common.sh

step "a simulated p6e-gb200.36xlarge: driver root, sim config, dpkg -i"
rack_config /etc/gpuslice/sim.toml
dpkg -i /out/gpuslice.deb
[ "$(show ActiveState)/$(show SubState)" = active/running ] || fail "gpusliced is not active/running after install"
gpuslicectl gpus
[ "$(gpuslicectl gpus | grep -c " $CLIQUE\$")" = 4 ] || fail "not four GPUs in the clique $CLIQUE"
gpuslicectl domains
gpuslicectl domains | grep -qx "clique: $CLIQUE" || fail "gpuslicectl domains: not the clique $CLIQUE"
gpuslicectl domains | grep -qx "bind address: $NODE_ADDR" || fail "gpuslicectl domains: not bound to $NODE_ADDR"
gpuslicectl domains | grep -qx "rack network: $RACK_CIDR" || fail "gpuslicectl domains: not the rack network $RACK_CIDR"
systemctl cat gpuslice-imex@.service >/dev/null || fail "the .deb has no gpuslice-imex@.service"
rack_mark installed

step "the nodes reach each other over TCP, on the rack network and on the other"
rack_listen
rack_mark listening
rack_wait listening
for addr in $(peers) $(other_peers); do
	out=$(rack-probe tcp "$addr" "$RACK_PORT") || fail "$out"
	echo "$out"
done

step "a service with IPAddressDeny=any, IPAddressAllow=$RACK_CIDR: the rack, not the other network"
for peer in $(peers); do
	other=$(echo "$OTHER_ADDRS" | tr ' ' '\n' | sed -n "$(echo "$RACK_ADDRS" | tr ' ' '\n' | grep -nx "$peer" | cut -d: -f1)p")
	out=$(systemd-run --quiet --wait --pipe -p IPAddressDeny=any -p "IPAddressAllow=$RACK_CIDR" \
		-p "RestrictAddressFamilies=AF_INET AF_INET6" \
		/bin/sh -c "rack-probe tcp $peer $RACK_PORT; rack-probe tcp $other $RACK_PORT; rack-probe udp $other 9" \
		</dev/null || true)
	echo "$out"
	echo "$out" | grep -q "^tcp $peer connected node-" || fail "the sandbox refused $peer, inside $RACK_CIDR"
	echo "$out" | grep -q "^tcp $other failed: " || fail "the sandbox let a TCP connection to $other through"
	echo "$out" | grep -q "^udp $other failed: .*Operation not permitted" || fail "the sandbox let a datagram to $other through"
	# The same node, outside the sandbox: the address is there, the sandbox refused it.
	out=$(rack-probe tcp "$other" "$RACK_PORT") || fail "$other does not answer outside the sandbox either: $out"
	echo "outside the sandbox: $out"
done
rack_mark probed

step "the IMEX stand-ins, one per node under that sandbox, form a domain of the rack over TCP"
mkdir -p /run/rack-imex
echo "$RACK_ADDRS" | tr ' ' '\n' >/run/rack-imex/nodes_config.cfg
cat >/run/rack-imex/imexd.cfg <<EOF
BIND_INTERFACE_IP=$NODE_ADDR
IMEX_NODE_CONFIG_FILE=/run/rack-imex/nodes_config.cfg
IMEX_CMD_ENABLED=1
IMEX_CMD_UNIX_DOMAIN_PATH=/run/rack-imex/cmd.sock
EOF
systemd-run --quiet --unit=rack-imex -p IPAddressDeny=any -p "IPAddressAllow=$RACK_CIDR" \
	-p "RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6" /usr/bin/nvidia-imex -c /run/rack-imex/imexd.cfg
ctl="nvidia-imex-ctl -c /run/rack-imex/imexd.cfg"
timeout 30 sh -c "until $ctl -q 2>/dev/null | grep -qx READY; do sleep 0.2; done" \
	|| { journalctl -b -u rack-imex --no-pager | tail -n 20; fail "the IMEX stand-in is not READY"; }
# Connected: every node answers, and each row of the matrix is C to every
# node (a READY daemon may not have connected yet: wait for it).
connected() {
	local rows
	rows=$($ctl -N | sed -n '/Nodes From/,/^$/p' | grep -E '^ *[0-9]+ ')
	[ "$(echo "$rows" | wc -l)" = "$NODE_COUNT" ] && ! echo "$rows" | grep -Eq '^ *[0-9]+ .*[^C ]'
}
for _ in $(seq 150); do connected && break; sleep 0.2; done
$ctl -N
connected || fail "a node of the domain is not connected to every other within 30 s"
$ctl -N | grep -qx 'Domain State: UP' || fail "the domain of the stand-ins is not UP"
rack_mark imex-up
rack_wait imex-up
systemctl stop rack-imex.service

step "the rack is done"
rack_mark finished
rack_wait finished
echo PASS
