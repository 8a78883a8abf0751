# Sourced first by each script the nspawn tests boot (in_container.sh,
# upgrade.sh): the log, the helpers, the system bus, the stand-ins and the
# unit's drop-in that points gpusliced at /etc/gpuslice/sim.toml (which the
# script writes). /out is the test's folder (nspawn/mod.rs): the .deb is
# /out/gpuslice.deb, the stand-ins /out/fake-mps-control and
# /out/fake-nvidia-smi, a driver root /out/sim-root; the output goes to
# /out/log, and the script's exit status becomes systemd-nspawn's. Every wait
# is on an event (a systemd job, a journal line), bounded by `timeout`.
exec >/out/log 2>&1
set -eu

# The stand-ins: nvidia-smi as it is (gpusliced runs it in its sandbox), the
# MPS control program behind a wrapper that names its record (what each
# daemon was started with and told); the daemons run as transient units,
# outside gpusliced's sandbox, so they can write it there.
STAND_INS=/usr/local/lib/gpuslice-test
MPS_RECORD=/var/log/gpuslice-mps.record

step() { echo "== $*"; }
fail() {
	echo "FAIL: $*"
	systemctl status gpusliced.service --no-pager || true
	# With gpusliced's structured fields (error, unit, ...), which the short format drops.
	journalctl -b -u gpusliced.service --no-pager -o verbose \
		--output-fields=MESSAGE,F_ERROR,F_PROBLEM,F_SUPERVISOR,F_UNIT,F_DAEMON,F_PID \
		| grep -v '^[[:space:]]*$' | tail -n 120 || true
	systemctl list-units --all --no-pager 'gpuslice-mps-*' || true
	journalctl -b --no-pager -u 'gpuslice-mps-*' | tail -n 30 || true
	echo "-- the stand-in's record:"
	cat "$MPS_RECORD" 2>/dev/null || true
	# What a script adds to the report (its own units, say).
	if command -v fail_more >/dev/null 2>&1; then fail_more || true; fi
	exit 1
}
show() { systemctl show -p "$1" --value gpusliced.service; }
# Waits (bounded) for a line in this boot's journal of a unit (default gpusliced).
journal_has() {
	timeout 30 sh -c "journalctl -b -u '${2:-gpusliced.service}' -f -n all --no-pager | grep -m1 -F '$1'" >/dev/null
}
# The gpuslice-mps-* units systemd has loaded, one name a line.
mps_units() { systemctl list-units --all --plain --no-legend 'gpuslice-mps-*' | awk '{print $1}'; }
ushow() { systemctl show -p "$2" --value "$1"; }

# sim_config_file FILE SIM: writes gpusliced's config FILE: the simulated
# driver root, SIM as the [backend.sim] lines, and the MPS stand-in; a
# script appends its own sections after it.
sim_config_file() {
	cat >"$1" <<EOF
socket_group = "gpuslice"
driver_root = "/opt/gpuslice-sim"
[backend]
kind = "sim"
[backend.sim]
$2
[mps]
control_program = "$STAND_INS/mps-control"
EOF
}
# Writes /etc/gpuslice/sim.toml (sim_config_file) with the GPUs named as
# arguments (models).
sim_config() {
	local gpus
	gpus=$(printf '"%s", ' "$@")
	sim_config_file /etc/gpuslice/sim.toml "gpus = [${gpus%, }]"
}

step "the system bus: systemd.run= boots to kernel-command-line.target, which starts no sockets"
# On a host, sockets.target (before gpusliced's basic.target) has it listening.
systemctl start dbus.socket
test -S /run/dbus/system_bus_socket || fail "no system bus socket"

step "the stand-ins, and a drop-in pointing the unit at the sim config"
mkdir -p "$STAND_INS" /etc/gpuslice /etc/systemd/system/gpusliced.service.d
install -m 0755 /out/fake-mps-control /out/fake-nvidia-smi "$STAND_INS/"
cat >"$STAND_INS/mps-control" <<EOF
#!/bin/sh
FAKE_MPS_RECORD=$MPS_RECORD exec /usr/bin/python3 $STAND_INS/fake-mps-control "\$@"
EOF
chmod 0755 "$STAND_INS/mps-control"
cat >/etc/systemd/system/gpusliced.service.d/sim.conf <<EOF
[Service]
ExecStart=
ExecStart=/usr/bin/gpusliced --config /etc/gpuslice/sim.toml
WatchdogSec=4s
TimeoutAbortSec=10s
EOF
