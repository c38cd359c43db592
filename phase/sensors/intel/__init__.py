"""Intel discrete GPUs: i915/xe hwmon energy."""
