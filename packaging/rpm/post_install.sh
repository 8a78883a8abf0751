# %post of the gpuslice rpm ($1: 1 install, 2 upgrade). What Fedora's
# %sysusers_create_compat, %tmpfiles_create and %systemd_post expand to, plus
# a start on first install (as the .deb does), since cargo-generate-rpm has
# no rpm macros.
units=""
for unit in gpusliced.service gpuslice-dra-plugin.service; do
	[ -f "/usr/lib/systemd/system/$unit" ] && units="$units $unit"
done
systemd-sysusers /usr/lib/sysusers.d/gpuslice.conf >/dev/null 2>&1 || :
if [ -d /run/systemd/system ]; then
	systemd-tmpfiles --create /usr/lib/tmpfiles.d/gpusliced.conf >/dev/null 2>&1 || :
	systemctl daemon-reload >/dev/null 2>&1 || :
fi
if [ "$1" -eq 1 ]; then
	# 50-gpuslice.preset enables both units.
	systemctl --no-reload preset $units >/dev/null 2>&1 || :
	if [ -d /run/systemd/system ]; then
		systemctl --no-block start $units >/dev/null 2>&1 || :
	fi
fi
