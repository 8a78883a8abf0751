#!/bin/sh
# Runs inside a Debian 12 rootfs booted by systemd-nspawn (systemd.run=), as
# the upgrade test's body (nspawn/upgrade.rs): the gpuslice .deb installed, a
# claim of every kind prepared (two MPS control daemons as transient units),
# the operator's edits in both conffiles; then the package upgraded to a
# newer version of itself and downgraded back. After each, gpusliced was
# restarted and nothing a workload sees changed: the CDI ids, each spec byte
# for byte and not written again, each record byte for byte, the MIG layout,
# the sharing table, each MPS daemon's unit, MainPID and InvocationID (none started
# again, each taken over by the new gpusliced), a second prepare of each
# claim answering already_prepared with the same devices; the operator's
# edits are kept and the changed default lands beside as .dpkg-dist. Then
# every claim is unprepared. The newer version is this .deb repacked in here
# (no cargo-deb): Version <old>+upgrade1 and a changed default
# gpuslice.toml. common.sh (sourced first) says what /out holds.
. /out/common.sh

EXCLUSIVE=e0e0e0e0-1111-4111-8111-111111111111
WHOLE_MIG_GPU=e0e0e0e0-2222-4222-8222-222222222222
MIG_SLICE=e0e0e0e0-3333-4333-8333-333333333333
MPS_ON_MIG=e0e0e0e0-4444-4444-8444-444444444444
MPS_SHARE_A=e0e0e0e0-5555-4555-8555-555555555555
MPS_SHARE_B=e0e0e0e0-6666-4666-8666-666666666666
TIMESLICING=e0e0e0e0-7777-4777-8777-777777777777
ALL="$EXCLUSIVE $WHOLE_MIG_GPU $MIG_SLICE $MPS_ON_MIG $MPS_SHARE_A $MPS_SHARE_B $TIMESLICING"
MPS='{"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig","sharing":{"strategy":"MPS","mpsConfig":{"defaultActiveThreadPercentage":50}}}'
MIG_MPS='{"apiVersion":"resource.nvidia.com/v1beta1","kind":"MigDeviceConfig","sharing":{"strategy":"MPS","mpsConfig":{"defaultActiveThreadPercentage":25}}}'
TIMESLICE='{"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig","sharing":{"strategy":"TimeSlicing","timeSlicingConfig":{"interval":"Long"}}}'
mem() { echo "{\"apiVersion\":\"gpuslice.dev/v1alpha1\",\"kind\":\"MpsMemoryConfig\",\"memory\":\"$1\"}"; }
TOOK_OVER="took over a running MPS control daemon"
CONFFILES="gpuslice.toml gpuslice-dra-plugin.toml"

step "five simulated H100s: gpu-1 and gpu-2 MIG GPUs (slices made at prepare), gpu-3 and gpu-4 shared"
cp -a /out/sim-root /opt/gpuslice-sim
sim_config H100-80GB H100-80GB H100-80GB H100-80GB H100-80GB
cat >>/etc/gpuslice/sim.toml <<EOF
[mig]
advertise = "partitionable"
create = "on-prepare"
[[mig.gpu]]
index = 1
layout = ["3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"]
[[mig.gpu]]
index = 2
layout = ["3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"]
[timeslice]
nvidia_smi = "$STAND_INS/fake-nvidia-smi"
EOF

OLD=$(dpkg-deb -f /out/gpuslice.deb Version)
NEW="$OLD+upgrade1"
step "dpkg -i the .deb ($OLD)"
dpkg -i /out/gpuslice.deb
[ "$(show ActiveState)/$(show SubState)" = active/running ] || fail "not running after the install"
gpuslicectl status >/dev/null || [ $? -eq 3 ] || fail "gpuslicectl status"

step "the newer version: the same .deb repacked as $NEW, its default gpuslice.toml changed"
dpkg-deb -R /out/gpuslice.deb /tmp/new
sed -i "s/^Version: .*/Version: $NEW/" /tmp/new/DEBIAN/control
echo "# a new default" >>/tmp/new/etc/gpuslice/gpuslice.toml
if [ -f /tmp/new/DEBIAN/md5sums ]; then
	(cd /tmp/new && find . -type f ! -path './DEBIAN/*' -printf '%P\n' | LC_ALL=C sort | xargs md5sum >DEBIAN/md5sums)
fi
dpkg-deb --root-owner-group -Zgzip -b /tmp/new /tmp/new.deb
[ "$(dpkg-deb -f /tmp/new.deb Version)" = "$NEW" ] || fail "the repacked .deb is not $NEW"
dpkg --compare-versions "$NEW" gt "$OLD" || fail "$NEW is not newer than $OLD"
for f in $CONFFILES; do
	grep -qx "/etc/gpuslice/$f" /tmp/new/DEBIAN/conffiles || fail "$f is not a conffile"
done
mkdir /tmp/old
dpkg-deb -x /out/gpuslice.deb /tmp/old

step "a claim of every kind, each answered already_prepared false"
# prep PHASE UID ARGS...: prepares, its answer kept as /tmp/prepare-UID-PHASE;
# the first answer must be new, every later one already_prepared with the
# same devices and CDI ids.
prep() {
	phase=$1 uid=$2
	shift 2
	answer=/tmp/prepare-$uid-$phase
	gpuslicectl prepare --uid "$uid" --output json "$@" >"$answer" || fail "prepare of $uid ($phase)"
	if [ "$phase" = first ]; then
		grep -q '"already_prepared": false' "$answer" || fail "$uid: $(cat "$answer")"
	else
		grep -q '"already_prepared": true' "$answer" || fail "$uid after the $phase: $(cat "$answer")"
		sed 's/"already_prepared": true/"already_prepared": false/' "$answer" |
			diff -u "/tmp/prepare-$uid-first" - || fail "$uid: the answer after the $phase differs"
	fi
}
prepare_all() {
	prep "$1" "$EXCLUSIVE" --device gpu-0
	prep "$1" "$WHOLE_MIG_GPU" --device gpu-1
	prep "$1" "$MIG_SLICE" --device gpu-2-mig-3g40gb-4
	prep "$1" "$MPS_ON_MIG" --device gpu-2-mig-2g20gb-0 --config "$MIG_MPS"
	prep "$1" "$MPS_SHARE_A" --device gpu-3 --class-config "$MPS" --config "$(mem 20Gi)"
	prep "$1" "$MPS_SHARE_B" --device gpu-3 --class-config "$MPS" --config "$(mem 40Gi)"
	prep "$1" "$TIMESLICING" --device gpu-4 --config "$TIMESLICE"
}
prepare_all first
[ "$(mps_units | wc -l)" = 2 ] || fail "not two MPS units (gpu-3, the slice of gpu-2): $(mps_units)"
for unit in $(mps_units); do
	[ "$(ushow "$unit" ActiveState)/$(ushow "$unit" SubState)" = active/running ] || fail "$unit is not running"
done
gpuslicectl claims
gpuslicectl mig
gpuslicectl sharing

step "the operator edits both conffiles"
for f in $CONFFILES; do
	echo "# edited by the operator" >>"/etc/gpuslice/$f"
	cp "/etc/gpuslice/$f" "/tmp/edited-$f"
done

# snapshot DIR: what a workload sees, and what tells whether it was touched.
snapshot() {
	mkdir "$1"
	gpuslicectl claims --output json | grep -o 'k8s\.gpuslice\.dev/claim=[^"]*' | LC_ALL=C sort >"$1/cdi-ids"
	(cd /run/cdi && sha256sum k8s.gpuslice.dev-claim_*.json &&
		stat -c '%n: inode %i, modified %y' k8s.gpuslice.dev-claim_*.json) >"$1/specs"
	(cd /var/lib/gpuslice/claims && sha256sum ./*.json) >"$1/records"
	gpuslicectl mig >"$1/mig"
	gpuslicectl sharing >"$1/sharing"
	for unit in $(mps_units); do
		echo "$unit MainPID=$(ushow "$unit" MainPID) InvocationID=$(ushow "$unit" InvocationID)" \
			"$(ushow "$unit" ActiveState)/$(ushow "$unit" SubState) NRestarts=$(ushow "$unit" NRestarts)"
	done >"$1/mps-units"
	grep -c '^start ' "$MPS_RECORD" >"$1/mps-starts"
}
count_in_journal() { journalctl -b -u gpusliced.service -o cat --no-pager | grep -cF "$1" || true; }

# switch_to DEB VERSION WORD: dpkg -i --force-confold DEB (the upgrade or the
# downgrade, named WORD) and every check that it lost nothing.
switch_to() {
	deb=$1 version=$2 word=$3
	step "the $word to $version: dpkg -i --force-confold"
	snapshot "/tmp/before-$word"
	pid=$(show MainPID) invocation=$(show InvocationID) restarts=$(show NRestarts)
	units=$(wc -l <"/tmp/before-$word/mps-units")
	took=$(count_in_journal "$TOOK_OVER")
	stale=$(count_in_journal "left from a claim that is gone")
	dpkg -i --force-confold "$deb" >"/tmp/dpkg-$word" 2>&1 || { cat "/tmp/dpkg-$word"; fail "dpkg -i $deb"; }
	cat "/tmp/dpkg-$word"
	[ "$(dpkg-query -W -f '${Version}' gpuslice)" = "$version" ] || fail "dpkg-query: $(dpkg-query -W gpuslice)"

	step "the $word: gpusliced restarted (restart-after-upgrade), exited cleanly, and answers"
	[ "$(show ActiveState)/$(show SubState)" = active/running ] || fail "not running after the $word"
	[ "$(show InvocationID)" != "$invocation" ] || fail "gpusliced was not restarted by the $word"
	[ "$(show MainPID)" != "$pid" ] || fail "same main pid after the $word"
	[ "$(show NRestarts)" = "$restarts" ] || fail "gpusliced failed and was restarted by systemd"
	[ "$(show Result)" = success ] || fail "Result=$(show Result)"
	gpuslicectl status >/dev/null || [ $? -eq 3 ] || fail "gpuslicectl status after the $word"

	step "the $word: the new gpusliced took over each of the $units MPS daemons, stopped none"
	want=$((took + units))
	# Logged before READY=1, so before dpkg returned; journald may lag.
	timeout 30 sh -c "until [ \$(journalctl -b -u gpusliced.service -o cat --no-pager | grep -cF '$TOOK_OVER') -ge $want ]; do sleep 0.2; done" \
		|| fail "the journal has not $want lines '$TOOK_OVER'"
	[ "$(count_in_journal "$TOOK_OVER")" = "$want" ] || fail "not one '$TOOK_OVER' per daemon"
	[ "$(count_in_journal "left from a claim that is gone")" = "$stale" ] || fail "a daemon was stopped as stale"

	step "the $word: CDI ids, specs, records, MIG layout, sharing, MPS units unchanged"
	snapshot "/tmp/after-$word"
	for what in cdi-ids specs records mig sharing mps-units mps-starts; do
		diff -u "/tmp/before-$word/$what" "/tmp/after-$word/$what" || fail "$what changed across the $word"
	done
	cat "/tmp/after-$word/mps-units"

	step "the $word: each claim prepared again answers already_prepared, same devices"
	prepare_all "$word"

	step "the $word: the operator's edits kept, the package's default beside them"
	for f in $CONFFILES; do
		cmp "/etc/gpuslice/$f" "/tmp/edited-$f" || fail "/etc/gpuslice/$f: the operator's edit is lost"
	done
	grep -q "Using current old file as you requested" "/tmp/dpkg-$word" || fail "dpkg did not keep the edited gpuslice.toml"
	# Unchanged between the versions: kept without a word and without a copy.
	test ! -e /etc/gpuslice/gpuslice-dra-plugin.toml.dpkg-dist || fail "a .dpkg-dist of the unchanged plugin config"
}

switch_to /tmp/new.deb "$NEW" upgrade
cmp /etc/gpuslice/gpuslice.toml.dpkg-dist /tmp/new/etc/gpuslice/gpuslice.toml \
	|| fail "the new default is not beside the edited gpuslice.toml as .dpkg-dist"

switch_to /out/gpuslice.deb "$OLD" downgrade
grep -q "downgrading gpuslice from $NEW to $OLD" /tmp/dpkg-downgrade || fail "dpkg did not say it was downgrading"
cmp /etc/gpuslice/gpuslice.toml.dpkg-dist /tmp/old/etc/gpuslice/gpuslice.toml \
	|| fail "the older default is not beside the edited gpuslice.toml as .dpkg-dist"

step "every claim unprepared: the MPS units stop, no spec of ours is left, the MIG GPUs are as configured"
for uid in $ALL; do
	gpuslicectl unprepare --uid "$uid" || fail "unprepare of $uid"
done
[ -z "$(mps_units)" ] || fail "units left: $(mps_units)"
[ "$(grep -c '^quit$' "$MPS_RECORD")" = "$(grep -c '^start ' "$MPS_RECORD")" ] || fail "a daemon was not asked to quit"
if ls /run/cdi/k8s.gpuslice.dev-claim_*.json 2>/dev/null; then fail "specs left"; fi
gpuslicectl mig
if gpuslicectl mig | grep -q claim; then fail "a MIG instance of a claim is left"; fi
gpuslicectl mig | grep '^gpu-1 ' | grep -q 'MIG enabled' || fail "gpu-1 is not back in MIG mode"
[ -z "$(gpuslicectl claims --output json | grep -o 'k8s\.gpuslice\.dev/claim=[^"]*')" ] || fail "claims left"

echo PASS
