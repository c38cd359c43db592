"""CPU package counters: RAPL powercap zones and AMD's amd_energy hwmon counters."""
