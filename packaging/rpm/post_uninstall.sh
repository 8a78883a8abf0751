# %postun of the gpuslice rpm ($1: 0 erase, 1 upgrade):
# %systemd_postun_with_restart. Claim records in /var/lib/gpuslice are kept
# on erase (rpm has no purge); remove them by hand once no claim is needed.
if [ -d /run/systemd/system ]; then
	systemctl daemon-reload >/dev/null 2>&1 || :
	if [ "$1" -ge 1 ]; then
		for unit in gpusliced.service gpuslice-dra-plugin.service; do
			if [ -f "/usr/lib/systemd/system/$unit" ]; then
				systemctl try-restart "$unit" >/dev/null 2>&1 || :
			fi
		done
	fi
fi
