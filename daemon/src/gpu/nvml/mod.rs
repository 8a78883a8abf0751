//! Real GPUs through NVML. Placeholder: filled in by the gpu work item.
