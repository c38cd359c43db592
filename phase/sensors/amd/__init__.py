"""AMD GPUs: amdgpu hwmon power and amdsmi's energy accumulator."""
