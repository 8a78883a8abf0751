#!/bin/sh
# Runs inside a Debian 12 rootfs booted by systemd-nspawn (systemd.run=), as
# the nspawn test's body: installs the gpuslice .deb under a real systemd 252
# and checks the service's life. /out is the test's folder: the .deb is
# /out/gpuslice.deb, this script's output goes to /out/log, and its exit
# status becomes systemd-nspawn's. Every wait is on an event (a systemd job,
# a journal line), bounded by `timeout`.
exec >/out/log 2>&1
set -eu

step() { echo "== $*"; }
fail() {
	echo "FAIL: $*"
	systemctl status gpusliced.service --no-pager || true
	journalctl -b -u gpusliced.service --no-pager | tail -n 60 || true
	exit 1
}
show() { systemctl show -p "$1" --value gpusliced.service; }
UID1=5b0c8f2e-1d3a-4e6b-9c7d-2a1b3c4d5e6f
SPEC=/run/cdi/k8s.gpuslice.dev-claim_$UID1.json

step "simulated GPUs: a driver root and a drop-in pointing the unit at a sim config"
mkdir -p /opt/gpuslice-sim/dev /etc/gpuslice /etc/systemd/system/gpusliced.service.d
for node in nvidia0 nvidia1 nvidiactl nvidia-uvm; do ln -s /dev/null "/opt/gpuslice-sim/dev/$node"; done
cat >/etc/gpuslice/sim.toml <<EOF
socket_group = "gpuslice"
driver_root = "/opt/gpuslice-sim"
[backend]
kind = "sim"
[backend.sim]
gpus = ["H100-80GB", "H100-80GB"]
EOF
cat >/etc/systemd/system/gpusliced.service.d/sim.conf <<EOF
[Service]
ExecStartPre=
ExecStartPre=/usr/bin/gpusliced --config /etc/gpuslice/sim.toml --check-config
ExecStart=
ExecStart=/usr/bin/gpusliced --config /etc/gpuslice/sim.toml
WatchdogSec=4s
TimeoutAbortSec=10s
EOF

step "dpkg -i: group, conffile, unit enabled and started (Type=notify reached active)"
dpkg -i /out/gpuslice.deb
getent group gpuslice || fail "no group gpuslice"
grep -qx /etc/gpuslice/gpuslice.toml /var/lib/dpkg/info/gpuslice.conffiles || fail "gpuslice.toml is not a conffile"
test -f /usr/lib/tmpfiles.d/gpusliced.conf -a -f /usr/lib/sysusers.d/gpuslice.conf || fail "tmpfiles/sysusers missing"
[ "$(systemctl is-enabled gpusliced.service)" = enabled ] || fail "not enabled"
[ "$(show ActiveState)" = active ] || fail "not active after install"
[ "$(show SubState)" = running ] || fail "not running"
out=$(systemd-analyze verify --man=no /usr/lib/systemd/system/gpusliced.service 2>&1) || fail "verify: $out"
[ -z "$out" ] || fail "verify: $out"

step "systemctl status, the journal, gpuslicectl"
systemctl status gpusliced.service --no-pager
journalctl -b -u gpusliced.service --no-pager | grep -q "gpusliced starting" || fail "no start-up log in the journal"
journalctl -b -u gpusliced.service --no-pager | grep -q "serving" || fail "no 'serving' in the journal"
[ "$(show StatusText)" != "" ] || fail "no STATUS= from sd_notify"
gpuslicectl status
gpuslicectl prepare --uid "$UID1" --device gpu-1
test -f "$SPEC" || fail "no CDI spec $SPEC (CDI dir not writable in the sandbox?)"
[ "$(stat -c %G /run/gpuslice/gpusliced.sock)" = gpuslice ] || fail "socket group is not gpuslice"

step "the sandbox is in force"
pid=$(show MainPID)
grep -E '^(CapBnd|NoNewPrivs|Seccomp):' "/proc/$pid/status"
grep -q '^CapBnd:[[:space:]]*0000000008200029$' "/proc/$pid/status" || fail "capability bounding set differs"
grep -q '^NoNewPrivs:[[:space:]]*1$' "/proc/$pid/status" || fail "NoNewPrivileges is off"
grep -q '^Seccomp:[[:space:]]*2$' "/proc/$pid/status" || fail "no seccomp filter"

step "systemctl reload (SIGHUP, RELOADING=1 ... READY=1)"
systemctl reload gpusliced.service
journalctl -b -u gpusliced.service --no-pager | grep -q "reloaded" || fail "no 'reloaded' in the journal"
[ "$(show MainPID)" = "$pid" ] || fail "reload changed the main pid"
[ "$(show ActiveState)" = active ] || fail "not active after reload"

step "a hung daemon: the watchdog kills and restarts it"
kill -STOP "$pid"
timeout 120 sh -c 'journalctl -b -u gpusliced.service -f -n all --no-pager | grep -m1 "Watchdog timeout"' \
	|| fail "no watchdog timeout"
# The restart (RestartSec=2s) is a start job: this waits for it to reach active.
timeout 120 systemctl start gpusliced.service || fail "not restarted"
[ "$(show ActiveState)" = active ] || fail "not active after the watchdog restart"
[ "$(show MainPID)" != "$pid" ] || fail "same main pid after the watchdog"
[ "$(show NRestarts)" -ge 1 ] || fail "NRestarts did not grow"
gpuslicectl claims | grep -q "$UID1" || fail "the claim did not survive the restart"

step "metrics: the default sandbox refuses them; the packaged drop-ins enable each exporter"
EXAMPLES=/usr/share/doc/gpuslice/examples
PROM=/var/lib/prometheus/node-exporter
mkdir -p "$PROM"
cat >>/etc/gpuslice/sim.toml <<EOF
[metrics]
listen = "127.0.0.1:9464"
textfile = "$PROM/gpuslice.prom"
EOF
# Waits (bounded) for a line in this boot's journal of the unit.
journal_has() {
	timeout 30 sh -c "journalctl -b -u gpusliced.service -f -n all --no-pager | grep -m1 -F '$1'" >/dev/null
}
stop_and_reset() { systemctl stop gpusliced.service; systemctl reset-failed gpusliced.service; }
if systemctl restart gpusliced.service; then fail "an IP listener started under RestrictAddressFamilies=AF_UNIX"; fi
journal_has "metrics.listen: cannot listen on 127.0.0.1:9464" || fail "no error naming metrics.listen"
stop_and_reset
cp "$EXAMPLES/metrics-listen.conf" /etc/systemd/system/gpusliced.service.d/
systemctl daemon-reload
if systemctl restart gpusliced.service; then fail "the textfile was written under ProtectSystem=strict"; fi
journal_has "metrics.textfile: cannot write $PROM/gpuslice.prom" || fail "no error naming metrics.textfile"
stop_and_reset
cp "$EXAMPLES/metrics-textfile.conf" /etc/systemd/system/gpusliced.service.d/
systemctl daemon-reload
systemctl restart gpusliced.service || fail "not started with both metrics drop-ins"
show StatusText | grep -qF "metrics on http://127.0.0.1:9464/metrics" || fail "no metrics address in STATUS="
scrape=$(bash -c 'exec 3<>/dev/tcp/127.0.0.1/9464 && printf "GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n" >&3 && cat <&3')
echo "$scrape" | head -n 1 | grep -q "200 OK" || fail "scrape: $scrape"
echo "$scrape" | grep -qxF 'gpuslice_claims{kind="exclusive"} 1' || fail "the scrape lacks the claim: $scrape"
grep -qxF 'gpuslice_claims{kind="exclusive"} 1' "$PROM/gpuslice.prom" || fail "the textfile lacks the claim"
[ "$(stat -c %a "$PROM/gpuslice.prom")" = 644 ] || fail "textfile mode is not 0644"

step "dpkg -r: stopped, binaries gone, conffile kept"
dpkg -r gpuslice
[ "$(systemctl is-active gpusliced.service)" != active ] || fail "still active after dpkg -r"
test ! -e /usr/bin/gpusliced || fail "binary left after dpkg -r"
test -f /etc/gpuslice/gpuslice.toml || fail "conffile removed by dpkg -r"
test ! -e /run/gpuslice/gpusliced.sock || fail "socket left after dpkg -r"

step "dpkg -P: config, state and the claim's spec gone"
rm -rf /etc/gpuslice/sim.toml /etc/systemd/system/gpusliced.service.d
dpkg -P gpuslice
test ! -e /etc/gpuslice || fail "/etc/gpuslice left after purge"
test ! -e /var/lib/gpuslice || fail "/var/lib/gpuslice left after purge"
test ! -e "$SPEC" || fail "CDI spec left after purge"
if dpkg -s gpuslice >/dev/null 2>&1; then fail "package still known to dpkg"; fi

echo PASS
