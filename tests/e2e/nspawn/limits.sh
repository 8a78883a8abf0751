#!/bin/sh
# Runs inside a Debian 12 rootfs booted by systemd-nspawn (systemd.run=), as
# the limits test's body (nspawn/limits.rs): `[limits] overshare = "end"`
# under the packaged, hardened unit, on fake GPU processes running as nobody
# (as a container's do). With the unit's CAP_KILL the claim's largest
# process is ended (exit 143), its other one lives, one journal line; with a
# drop-in `CapabilityBoundingSet=~CAP_KILL` the same over-share gets outcome
# not-permitted, an ERROR line naming CAP_KILL, and the process lives; with
# the drop-in removed it is ended again. common.sh (sourced first) says what
# /out holds.
. /out/common.sh

CLAIM=a1a1a1a1-2424-4aaa-8aaa-00000000000a
MPS='{"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig","sharing":{"strategy":"MPS","mpsConfig":{"defaultActiveThreadPercentage":50}}}'
MEM='{"apiVersion":"gpuslice.dev/v1alpha1","kind":"MpsMemoryConfig","memory":"20Gi"}'
DROP_IN=/etc/systemd/system/gpusliced.service.d/no-kill.conf
NOBODY=65534

# Starts a fake GPU process of the claim using $1 of memory, as a
# container's: sim exec (root) starts setpriv, which drops to nobody and
# execs sleep in the pid sim exec registered, with the claim's environment.
# Sets EXEC (sim exec's pid) and PID (sleep's), once sim exec has registered it.
as_nobody() {
	: >"/tmp/exec-$1"
	gpuslicectl sim exec --claim "$CLAIM" --memory "$1" --sm 10 -- \
		setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups sleep 600 2>"/tmp/exec-$1" &
	EXEC=$!
	timeout 30 sh -c "until grep -q '^sim exec: pid ' /tmp/exec-$1; do sleep 0.2; done" \
		|| fail "sim exec of $1 did not register: $(cat "/tmp/exec-$1")"
	PID=$(sed -n 's/^sim exec: pid \([0-9]*\) .*/\1/p' "/tmp/exec-$1")
	cat "/tmp/exec-$1"
}
# Waits (bounded) until process $1 runs sleep as nobody.
is_nobody() {
	timeout 30 sh -c "until [ \"\$(cat /proc/$1/comm)\" = sleep ] && [ \"\$(stat -c %u /proc/$1)\" = $NOBODY ]; do sleep 0.2; done" \
		|| fail "process $1 is not sleep running as nobody"
}
# Sets RC to the exit status of sim exec $1 (its command's), once it has
# exited (a zombie until this shell waits for it).
exit_of() {
	timeout 30 sh -c "until [ ! -e /proc/$1 ] || grep -q '^State:[[:space:]]*Z' /proc/$1/status; do sleep 0.2; done" \
		|| fail "sim exec $1 still runs"
	RC=0
	wait "$1" || RC=$?
}
# The journal's limit-action lines about process $1 ("ended process $1 (",
# "would end process $1 (", "did not end process $1 ("), and how many.
action_lines() {
	journalctl -b -u gpusliced.service -o cat --no-pager | grep -E "^(ended|would end|did not end) process $1 \(" || true
}
actions_on() { action_lines "$1" | grep -c . || true; }
# The time of gpusliced's latest sample, in ms (a top-level key of the
# pretty-printed reply).
SAMPLED_AT="gpuslicectl top --output json | sed -n 's/^  \"sampled_at_ms\": \([0-9]*\).*/\1/p'"
# Waits (bounded) for two more samples after now.
two_more_samples() {
	since=$(sh -c "$SAMPLED_AT")
	[ -n "$since" ] || fail "no sampled_at_ms in: $(gpuslicectl top --output json)"
	timeout 30 sh -c "until [ \"\$($SAMPLED_AT)\" -ge $((since + 2000)) ]; do sleep 0.2; done" \
		|| fail "no two more samples after $since"
}
capbnd() { grep '^CapBnd:' "/proc/$(show MainPID)/status" | awk '{print $2}'; }

step "one simulated H100, sampled every second; [limits] overshare = end, grace 1 s"
cp -a /out/sim-root /opt/gpuslice-sim
sim_config H100-80GB
cat >>/etc/gpuslice/sim.toml <<EOF
[activity]
interval_s = 1
[limits]
overshare = "end"
grace_s = 1
EOF
dpkg -i /out/gpuslice.deb
[ "$(show ActiveState)" = active ] || fail "not active after install"
# CHOWN (bit 0), DAC_READ_SEARCH (2), FOWNER (3), KILL (5), SYS_PTRACE (19),
# SYS_ADMIN (21), MKNOD (27): the packaged unit's set.
[ "$(capbnd)" = 000000000828002d ] || fail "capability bounding set: $(capbnd)"
gpuslicectl prepare --uid "$CLAIM" --namespace ml --name infer-a --device gpu-0 \
	--config "$MPS" --config "$MEM" || fail "prepare of the MPS claim"

step "with CAP_KILL: the claim's largest process (nobody's) is ended, its other one lives, one line"
as_nobody 10Gi
EXEC_SMALL=$EXEC PID_SMALL=$PID
is_nobody "$PID_SMALL"
as_nobody 12Gi
EXEC_LARGE=$EXEC PID_LARGE=$PID
journal_has "ended process $PID_LARGE (sleep, 12.0 GiB) of claim ml/infer-a ($CLAIM): the claim used 22.0 GiB on gpu-0" \
	|| fail "process $PID_LARGE was not ended"
action_lines "$PID_LARGE"
action_lines "$PID_LARGE" \
	| grep -qF "over its mps share of 20.0 GiB (limits: overshare = end, grace 1 s); SIGTERM" \
	|| fail "the line does not say the share, the limits and SIGTERM"
exit_of "$EXEC_LARGE"
[ "$RC" = 143 ] || fail "sim exec of the 12 GiB process did not exit 143 (SIGTERM)"
two_more_samples
kill -0 "$PID_SMALL" || fail "the claim's 10 GiB process was ended too"
kill -0 "$EXEC_SMALL" || fail "sim exec of the 10 GiB process exited"
[ "$(actions_on "$PID_LARGE")" = 1 ] || fail "not one line for process $PID_LARGE: $(actions_on "$PID_LARGE")"
[ "$(actions_on "$PID_SMALL")" = 0 ] || fail "a line for process $PID_SMALL"
gpuslicectl top --output json | grep -q '"outcome": *"terminated"' || fail "top does not show the action"
gpuslicectl top --once

step "without CAP_KILL (a drop-in subtracts it): not-permitted, an ERROR line naming CAP_KILL, the process lives"
printf '[Service]\nCapabilityBoundingSet=~CAP_KILL\n' >"$DROP_IN"
systemctl daemon-reload
systemctl restart gpusliced.service || fail "gpusliced did not restart without CAP_KILL"
[ "$(capbnd)" = 000000000828000d ] || fail "the drop-in did not take CAP_KILL alone: $(capbnd)"
as_nobody 12Gi
EXEC_DENIED=$EXEC PID_DENIED=$PID
journal_has "gpusliced may not signal process $PID_DENIED (uid $NOBODY): it needs CAP_KILL; was the unit changed?" \
	|| fail "no not-permitted line for process $PID_DENIED"
journalctl -b -u gpusliced.service -p err -o cat --no-pager | grep -F "process $PID_DENIED (" | head -n 1 >/tmp/denied || true
cat /tmp/denied
grep -qF "did not end process $PID_DENIED (sleep, 12.0 GiB) of claim ml/infer-a ($CLAIM)" /tmp/denied \
	|| fail "no ERROR line saying process $PID_DENIED was not ended"
journalctl -b -u gpusliced.service -o verbose --no-pager | grep -qx '[[:space:]]*F_OUTCOME=not-permitted' \
	|| fail "no outcome=not-permitted field"
kill -0 "$PID_DENIED" || fail "process $PID_DENIED was ended without CAP_KILL"
kill -0 "$EXEC_DENIED" || fail "sim exec of process $PID_DENIED exited"
kill -0 "$PID_SMALL" || fail "the claim's 10 GiB process was ended"
if journalctl -b -u gpusliced.service -o cat --no-pager | grep -qF "ended process $PID_DENIED ("; then
	fail "process $PID_DENIED reported ended"
fi

step "the drop-in removed: CAP_KILL is back and the same process is ended"
rm "$DROP_IN"
systemctl daemon-reload
systemctl restart gpusliced.service || fail "gpusliced did not restart"
[ "$(capbnd)" = 000000000828002d ] || fail "capability bounding set after the drop-in: $(capbnd)"
journal_has "ended process $PID_DENIED (sleep, 12.0 GiB) of claim ml/infer-a ($CLAIM)" \
	|| fail "process $PID_DENIED was not ended once CAP_KILL was back"
exit_of "$EXEC_DENIED"
[ "$RC" = 143 ] || fail "sim exec of process $PID_DENIED did not exit 143"
kill -0 "$PID_SMALL" || fail "the claim's 10 GiB process was ended"

step "clean up: the last process ended, the claim unprepared"
kill "$EXEC_SMALL"
exit_of "$EXEC_SMALL"
[ "$RC" = 143 ] || fail "sim exec of the 10 GiB process did not pass SIGTERM on"
gpuslicectl unprepare --uid "$CLAIM" || fail "unprepare"
[ -z "$(mps_units)" ] || fail "MPS units left: $(mps_units)"

echo PASS
