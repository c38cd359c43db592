"""NVIDIA Jetson modules: INA3221 rails."""
