"""Charts (Altair/Vega-Lite specs and PNG fallbacks): energy charts from summary rows, the
strategy charts from runs, the cost-model charts."""
