//! Every export has the signature nvml-wrapper-sys 0.10.0 (NVML 13.0's
//! header) gives the function of its name: a mismatch does not compile.

use nvml_wrapper_sys::bindings::NvmlLib;

use super::device::*;
use super::events::*;
use super::mig::*;
use super::process::*;
use super::system::*;

use std::marker::PhantomData;

/// The function type of the library field `field` names.
fn field_type<T, E>(_field: fn(&NvmlLib) -> &Result<T, E>) -> PhantomData<T> {
    PhantomData
}

/// Holds when `export` is of type `T`.
fn same<T>(_type: PhantomData<T>, _export: T) {}

macro_rules! check {
    ($($name:ident),* $(,)?) => {
        $(same(field_type(|lib: &NvmlLib| &lib.$name), $name);)*
    };
}

#[test]
fn exports_match_the_header() {
    check!(
        nvmlInit_v2,
        nvmlInitWithFlags,
        nvmlShutdown,
        nvmlErrorString,
        nvmlSystemGetDriverVersion,
        nvmlSystemGetNVMLVersion,
        nvmlSystemGetCudaDriverVersion,
        nvmlSystemGetCudaDriverVersion_v2,
        nvmlDeviceGetCount_v2,
        nvmlDeviceGetHandleByIndex_v2,
        nvmlDeviceGetHandleByUUID,
        nvmlDeviceGetHandleByPciBusId_v2,
        nvmlDeviceGetName,
        nvmlDeviceGetUUID,
        nvmlDeviceGetSerial,
        nvmlDeviceGetIndex,
        nvmlDeviceGetMinorNumber,
        nvmlDeviceGetBrand,
        nvmlDeviceGetArchitecture,
        nvmlDeviceGetCudaComputeCapability,
        nvmlDeviceGetPciInfo_v3,
        nvmlDeviceGetPciInfoExt,
        nvmlDeviceGetMemoryInfo,
        nvmlDeviceGetMemoryInfo_v2,
        nvmlDeviceGetComputeMode,
        nvmlDeviceSetComputeMode,
        nvmlDeviceGetMigMode,
        nvmlDeviceSetMigMode,
        nvmlDeviceIsMigDeviceHandle,
        nvmlDeviceGetMaxMigDeviceCount,
        nvmlDeviceGetMigDeviceHandleByIndex,
        nvmlDeviceGetDeviceHandleFromMigDeviceHandle,
        nvmlDeviceGetGpuInstanceId,
        nvmlDeviceGetComputeInstanceId,
        nvmlDeviceGetAttributes_v2,
        nvmlDeviceGetNvLinkState,
        nvmlDeviceGetGpuFabricInfoV,
        nvmlDeviceGetMemoryErrorCounter,
        nvmlDeviceGetFieldValues,
        nvmlDeviceGetGpuInstanceProfileInfo,
        nvmlDeviceGetGpuInstanceProfileInfoV,
        nvmlDeviceGetGpuInstancePossiblePlacements_v2,
        nvmlDeviceGetGpuInstanceRemainingCapacity,
        nvmlDeviceCreateGpuInstance,
        nvmlDeviceCreateGpuInstanceWithPlacement,
        nvmlDeviceGetGpuInstances,
        nvmlDeviceGetGpuInstanceById,
        nvmlGpuInstanceGetInfo,
        nvmlGpuInstanceDestroy,
        nvmlGpuInstanceGetComputeInstanceProfileInfo,
        nvmlGpuInstanceGetComputeInstanceProfileInfoV,
        nvmlGpuInstanceGetComputeInstanceRemainingCapacity,
        nvmlGpuInstanceCreateComputeInstance,
        nvmlGpuInstanceGetComputeInstances,
        nvmlGpuInstanceGetComputeInstanceById,
        nvmlComputeInstanceGetInfo_v2,
        nvmlComputeInstanceDestroy,
        nvmlDeviceGetComputeRunningProcesses_v3,
        nvmlDeviceGetMPSComputeRunningProcesses_v3,
        nvmlDeviceGetGraphicsRunningProcesses_v3,
        nvmlDeviceGetProcessUtilization,
        nvmlDeviceGetSupportedEventTypes,
        nvmlEventSetCreate,
        nvmlEventSetFree,
        nvmlDeviceRegisterEvents,
        nvmlEventSetWait_v2,
    );
}
