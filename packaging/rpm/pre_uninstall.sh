# %preun of the gpuslice rpm ($1: 0 erase, 1 upgrade): %systemd_preun.
if [ "$1" -eq 0 ]; then
	for unit in gpusliced.service gpuslice-dra-plugin.service; do
		if [ -f "/usr/lib/systemd/system/$unit" ]; then
			systemctl --no-reload disable --now "$unit" >/dev/null 2>&1 || :
		fi
	done
fi
