#!/bin/sh
# Runs inside a Debian 12 rootfs booted by systemd-nspawn (systemd.run=), as
# the service test's body (nspawn/service.rs): installs the gpuslice .deb
# under a real systemd 252 and checks the service's life. common.sh (sourced
# first) says what /out holds and sets up the bus, the stand-ins and the
# unit's drop-in.
. /out/common.sh

UID1=5b0c8f2e-1d3a-4e6b-9c7d-2a1b3c4d5e6f
SPEC=/run/cdi/k8s.gpuslice.dev-claim_$UID1.json

step "simulated GPUs: a driver root and a sim config"
mkdir -p /opt/gpuslice-sim/dev
for node in nvidia0 nvidia1 nvidia2 nvidiactl nvidia-uvm; do ln -s /dev/null "/opt/gpuslice-sim/dev/$node"; done
sim_config H100-80GB H100-80GB H100-80GB

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
journalctl -b -u gpusliced.service --no-pager | grep -qF "serving on /run/gpuslice/gpusliced.sock: ready" || fail "no ready line in the journal"
[ "$(show StatusText)" != "" ] || fail "no STATUS= from sd_notify"
# Exit 3: it answers and lists a problem (this driver root has no libraries).
gpuslicectl status || [ $? -eq 3 ] || fail "gpuslicectl status"
gpusliced --config /etc/gpuslice/sim.toml --check-config || fail "check-config of the sim config"
gpuslicectl prepare --uid "$UID1" --device gpu-1
test -f "$SPEC" || fail "no CDI spec $SPEC (CDI dir not writable in the sandbox?)"
[ "$(stat -c %G /run/gpuslice/gpusliced.sock)" = gpuslice ] || fail "socket group is not gpuslice"

step "the sandbox is in force"
pid=$(show MainPID)
grep -E '^(CapBnd|NoNewPrivs|Seccomp):' "/proc/$pid/status"
# CHOWN (bit 0), DAC_READ_SEARCH (2), FOWNER (3), KILL (5), SYS_PTRACE (19),
# SYS_ADMIN (21), MKNOD (27).
grep -q '^CapBnd:[[:space:]]*000000000828002d$' "/proc/$pid/status" || fail "capability bounding set differs"
grep -q '^NoNewPrivs:[[:space:]]*1$' "/proc/$pid/status" || fail "NoNewPrivileges is off"
grep -q '^Seccomp:[[:space:]]*2$' "/proc/$pid/status" || fail "no seccomp filter"

step "per-claim use: another user's GPU process is seen and given to its claim (CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH under ProtectProc=invisible)"
# A fake GPU process of claim UID1 running as nobody, as a container's would:
# setpriv execs sleep in the pid sim exec registered, with the claim's CDI environment.
gpuslicectl sim exec --claim "$UID1" --memory 1Gi --sm 10 -- \
	setpriv --reuid=65534 --regid=65534 --clear-groups sleep 600 &
EXEC=$!
timeout 60 sh -c 'until gpuslicectl top --once | grep -Eq " gpu-1 +exclusive +1 "; do sleep 1; done' \
	|| { gpuslicectl top --once; fail "the claim's process (uid nobody) is not attributed to it"; }
gpuslicectl top --once
if gpuslicectl top --once | grep -q UNCLAIMED; then fail "a process is unclaimed"; fi
kill "$EXEC"
wait "$EXEC" || true

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

# --- MPS control daemons as transient units of the real systemd -------------
MPS_A=a1a1a1a1-5e6f-4a7b-8c9d-0e1f2a3b4c5d
MPS_B=b2b2b2b2-5e6f-4a7b-8c9d-0e1f2a3b4c5d
MPS_C=c3c3c3c3-5e6f-4a7b-8c9d-0e1f2a3b4c5d
MPS_CONFIG='{"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig","sharing":{"strategy":"MPS","mpsConfig":{"defaultActiveThreadPercentage":50,"defaultPinnedDeviceMemoryLimit":"4Gi"}}}'
# The `gpuslicectl sharing` row of the MPS daemon in unit $1: pid supervisor state restarts.
ctl_daemon() { gpuslicectl sharing | awk -v u="$1" '$4 == u {print $2, $3, $5, $6}'; }

step "MPS: a claim starts a transient unit over the system bus (auto picks systemd)"
gpuslicectl prepare --uid "$MPS_A" --device gpu-0 --config "$MPS_CONFIG" || fail "prepare of MPS claim A"
[ "$(mps_units | wc -l)" = 1 ] || fail "not one gpuslice-mps unit: $(mps_units)"
UNIT_A=$(mps_units)
echo "unit of claim A: $UNIT_A"
[ "$(ushow "$UNIT_A" ActiveState)/$(ushow "$UNIT_A" SubState)" = active/running ] || fail "$UNIT_A is not active/running"
HASH_A=${UNIT_A#gpuslice-mps-}
HASH_A=${HASH_A%.service}
DIR_A=/run/gpuslice/mps/$HASH_A
PID_A=$(ushow "$UNIT_A" MainPID)
ctl_daemon "$UNIT_A" | grep -qx "$PID_A systemd running 0" || fail "gpuslicectl sharing: $(gpuslicectl sharing)"
journalctl -b -u gpusliced.service -o verbose --no-pager | grep -qx '[[:space:]]*F_SUPERVISOR=systemd' \
	|| fail "the journal does not say supervisor=systemd"
step "MPS: its own cgroup, the daemon's environment, its output in the journal"
CG_A=$(ushow "$UNIT_A" ControlGroup)
[ "$CG_A" = "/system.slice/$UNIT_A" ] || fail "ControlGroup of $UNIT_A is $CG_A"
cat "/proc/$PID_A/cgroup"
grep -qF ":$CG_A" "/proc/$PID_A/cgroup" || fail "the daemon is not in $CG_A"
if grep -q gpusliced.service "/proc/$PID_A/cgroup"; then fail "the daemon is in gpusliced's cgroup"; fi
VISIBLE_A=$(cat "$DIR_A/key")
case "$VISIBLE_A" in GPU-*) ;; *) fail "key file of $UNIT_A: $VISIBLE_A" ;; esac
ENV_A=$(ushow "$UNIT_A" Environment)
echo "Environment=$ENV_A"
for want in "CUDA_VISIBLE_DEVICES=$VISIBLE_A" "CUDA_MPS_PIPE_DIRECTORY=$DIR_A/pipe" \
	"CUDA_MPS_LOG_DIRECTORY=$DIR_A/log" "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50"; do
	echo " $ENV_A " | grep -qF " $want " || fail "$UNIT_A lacks $want"
	tr '\0' '\n' <"/proc/$PID_A/environ" | grep -qxF "$want" || fail "the daemon's process lacks $want"
done
journal_has "Starting control daemon using socket $DIR_A/pipe/control" "$UNIT_A" \
	|| fail "no daemon output in journalctl -u $UNIT_A"
grep -qx "start CUDA_VISIBLE_DEVICES=$VISIBLE_A ATP=50" "$MPS_RECORD" || fail "no start in the record"
grep -qx "set_default_active_thread_percentage 50" "$MPS_RECORD" || fail "thread percentage not set"
grep -qx "set_default_device_pinned_mem_limit 0 4096M" "$MPS_RECORD" || fail "memory limit not set"
test -S "$DIR_A/pipe/control" || fail "no control socket in $DIR_A/pipe"

step "MPS: a claim on the same GPU and limits joins the unit; another GPU gets its own"
gpuslicectl prepare --uid "$MPS_B" --device gpu-0 --config "$MPS_CONFIG" || fail "prepare of MPS claim B"
[ "$(mps_units)" = "$UNIT_A" ] || fail "a second unit for the same GPU set: $(mps_units)"
[ "$(ushow "$UNIT_A" MainPID)" = "$PID_A" ] || fail "joining restarted the daemon"
[ "$(grep -c '^start ' "$MPS_RECORD")" = 1 ] || fail "a second daemon start for the same GPU set"
gpuslicectl prepare --uid "$MPS_C" --device gpu-2 --config "$MPS_CONFIG" || fail "prepare of MPS claim C"
[ "$(mps_units | wc -l)" = 2 ] || fail "not two units: $(mps_units)"
UNIT_C=$(mps_units | grep -vxF "$UNIT_A")
echo "unit of claim C: $UNIT_C"
[ "$(ushow "$UNIT_C" ActiveState)" = active ] || fail "$UNIT_C is not active"
HASH_C=${UNIT_C#gpuslice-mps-}
HASH_C=${HASH_C%.service}
[ "$(cat "/run/gpuslice/mps/$HASH_C/key")" != "$VISIBLE_A" ] || fail "$UNIT_C covers gpu-0"
gpuslicectl sharing

step "MPS: a daemon killed by SIGKILL is restarted by systemd, its limits applied again"
systemctl kill --signal=SIGKILL "$UNIT_A"
journal_has "Scheduled restart job" "$UNIT_A" || fail "systemd did not schedule a restart of $UNIT_A"
timeout 60 systemctl start "$UNIT_A" || fail "$UNIT_A did not come back"
NEW_PID_A=$(ushow "$UNIT_A" MainPID)
[ "$NEW_PID_A" != "$PID_A" ] || fail "same main pid after SIGKILL"
[ "$(ushow "$UNIT_A" NRestarts)" -ge 1 ] || fail "NRestarts did not grow"
echo "NRestarts of $UNIT_A: $(ushow "$UNIT_A" NRestarts)"
# gpusliced logs this once the new process has its limits set and read back.
journal_has "MPS control daemon back: limits applied again" \
	|| fail "gpusliced did not apply the limits again after the restart"
# After the daemon's second start, the same commands as after its first.
sed -n "\|^start CUDA_VISIBLE_DEVICES=$VISIBLE_A |h; \|^start CUDA_VISIBLE_DEVICES=$VISIBLE_A |!H; \${x;p}" "$MPS_RECORD" >/tmp/after-restart
cat /tmp/after-restart
[ "$(cat /tmp/after-restart)" = "start CUDA_VISIBLE_DEVICES=$VISIBLE_A ATP=50
get_server_list
set_default_active_thread_percentage 50
set_default_device_pinned_mem_limit 0 4096M
get_default_active_thread_percentage
get_default_device_pinned_mem_limit 0" ] || fail "the restarted daemon was not told its limits"
ctl_daemon "$UNIT_A" | grep -qx "$NEW_PID_A systemd running 1" || fail "gpuslicectl sharing: $(gpuslicectl sharing)"
gpuslicectl claims
for uid in "$MPS_A" "$MPS_B"; do
	gpuslicectl claims | grep -q "^problem: $uid: .*died and was restarted 1 time" \
		|| fail "the health of claim $uid does not say its daemon was restarted"
done

step "MPS: systemctl restart gpusliced keeps the units of live claims and adopts them"
INV_A=$(ushow "$UNIT_A" InvocationID)
INV_C=$(ushow "$UNIT_C" InvocationID)
PID_C=$(ushow "$UNIT_C" MainPID)
systemctl restart gpusliced.service || fail "gpusliced did not restart"
echo "$UNIT_A: MainPID $NEW_PID_A InvocationID $INV_A; $UNIT_C: MainPID $PID_C InvocationID $INV_C"
[ "$(ushow "$UNIT_A" MainPID)/$(ushow "$UNIT_A" InvocationID)" = "$NEW_PID_A/$INV_A" ] || fail "$UNIT_A was restarted"
[ "$(ushow "$UNIT_C" MainPID)/$(ushow "$UNIT_C" InvocationID)" = "$PID_C/$INV_C" ] || fail "$UNIT_C was restarted"
[ "$(grep -c '^start ' "$MPS_RECORD")" = 3 ] || fail "a daemon was started again"
[ "$(journalctl -b -u gpusliced.service --no-pager -o cat | grep -c 'took over a running MPS control daemon')" -ge 2 ] \
	|| fail "gpusliced did not adopt both units"
ctl_daemon "$UNIT_A" | grep -qx "$NEW_PID_A systemd running 1" || fail "after the restart: $(gpuslicectl sharing)"
ctl_daemon "$UNIT_C" | grep -qx "$PID_C systemd running 0" || fail "after the restart: $(gpuslicectl sharing)"

step "MPS: a unit whose claim record is gone is stopped at the next start"
systemctl stop gpusliced.service
rm "/var/lib/gpuslice/claims/$MPS_C.json"
systemctl start gpusliced.service || fail "gpusliced did not start"
[ "$(mps_units)" = "$UNIT_A" ] || fail "units after the start: $(mps_units)"
journalctl -b -u "$UNIT_C" --no-pager -o cat | tail -n 3
test ! -e "/run/gpuslice/mps/$HASH_C" || fail "the folder of $UNIT_C is left"
test ! -e "/run/cdi/k8s.gpuslice.dev-claim_$MPS_C.json" || fail "the spec of the gone claim is left"
journalctl -b -u gpusliced.service --no-pager -o cat | grep -q "left from a claim that is gone" \
	|| fail "no log of the stale daemon stopped"
[ "$(ushow "$UNIT_A" MainPID)" = "$NEW_PID_A" ] || fail "$UNIT_A was restarted with the stale one"
gpuslicectl sharing | awk '$1 == "gpu-2" {print $3}' | grep -qx DEFAULT || fail "gpu-2 not back to DEFAULT: $(gpuslicectl sharing)"

step "MPS: unpreparing the last claim stops and removes the unit and its folder"
gpuslicectl unprepare --uid "$MPS_A" || fail "unprepare of MPS claim A"
[ "$(ushow "$UNIT_A" ActiveState)" = active ] || fail "$UNIT_A stopped while claim B holds it"
gpuslicectl unprepare --uid "$MPS_B" || fail "unprepare of MPS claim B"
[ -z "$(mps_units)" ] || fail "units left: $(mps_units)"
test ! -e "$DIR_A" || fail "$DIR_A is left"
[ "$(tail -n 1 "$MPS_RECORD")" = quit ] || fail "the daemon was not asked to quit"
gpuslicectl sharing | awk '$1 == "gpu-0" {print $3}' | grep -qx DEFAULT || fail "gpu-0 not back to DEFAULT: $(gpuslicectl sharing)"

step "metrics: the default sandbox refuses them; the packaged drop-ins enable each exporter"
EXAMPLES=/usr/share/doc/gpuslice/examples
PROM=/var/lib/prometheus/node-exporter
mkdir -p "$PROM"
cat >>/etc/gpuslice/sim.toml <<EOF
[metrics]
listen = "127.0.0.1:9464"
textfile = "$PROM/gpuslice.prom"
EOF
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
