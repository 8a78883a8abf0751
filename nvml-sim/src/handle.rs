//! NVML's handles: opaque pointers a client keeps and passes back. Here each
//! names what it stands for ([`Handle`]: a GPU, a MIG device, a GPU or
//! compute instance by its ids, an event set) and points into one static
//! arena of this library, at an offset that encodes it: a client gets real,
//! readable addresses that stay the same for the same object, and decoding
//! one is arithmetic on its address, never a dereference. A handle outside
//! the arena, or of the wrong kind, is NVML's INVALID_ARGUMENT; whether what
//! it names still exists is the caller's to check (NVML's handles of a
//! destroyed instance are invalid; one made again at the same ids gets the
//! same handle, as NVML may reuse them).

use nvml_wrapper_sys::bindings as sys;

use crate::code::{Answer, INVALID_ARGUMENT};

/// GPUs a handle can name (indices 0..64).
pub const MAX_GPUS: u32 = 64;
/// Event sets a process can hold at once.
pub const MAX_EVENT_SETS: u32 = 1 << 13;

/// What a handle names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Handle {
    /// The GPU at this index.
    Gpu(u32),
    /// The MIG device of compute instance `ci` of GPU instance `gi`.
    Mig {
        /// The parent GPU's index.
        gpu: u32,
        /// GPU instance id.
        gi: u32,
        /// Compute instance id.
        ci: u32,
    },
    /// GPU instance `gi` of a GPU.
    GpuInstance {
        /// The GPU's index.
        gpu: u32,
        /// GPU instance id.
        gi: u32,
    },
    /// Compute instance `ci` of GPU instance `gi`.
    ComputeInstance {
        /// The GPU's index.
        gpu: u32,
        /// GPU instance id.
        gi: u32,
        /// Compute instance id.
        ci: u32,
    },
    /// An event set, by its number.
    EventSet(u32),
}

/// Bits of each field in a handle's code: kind 3, GPU 6, GI 4, CI 3.
const GPU_BITS: u32 = 6;
const GI_BITS: u32 = 4;
const CI_BITS: u32 = 3;
const KIND_SHIFT: u32 = GPU_BITS + GI_BITS + CI_BITS;
const CODES: usize = 1 << (KIND_SHIFT + 3);
/// Bytes between two handles: NVML's handles are pointers to structs.
const STRIDE: usize = 8;

/// The memory the handles point into, never read or written through them.
static ARENA: [u64; CODES] = [0; CODES];

const KIND_GPU: u32 = 1;
const KIND_MIG: u32 = 2;
const KIND_GI: u32 = 3;
const KIND_CI: u32 = 4;
const KIND_EVENT_SET: u32 = 5;

fn field(value: u32, bits: u32) -> Answer<u32> {
    if value < (1 << bits) {
        Ok(value)
    } else {
        Err(INVALID_ARGUMENT)
    }
}

impl Handle {
    /// The handle's code: its kind and fields packed. INVALID_ARGUMENT for
    /// ids too large for a handle.
    fn code(self) -> Answer<u32> {
        let pack = |kind: u32, gpu: u32, gi: u32, ci: u32| -> Answer<u32> {
            Ok(kind << KIND_SHIFT
                | field(gpu, GPU_BITS)? << (GI_BITS + CI_BITS)
                | field(gi, GI_BITS)? << CI_BITS
                | field(ci, CI_BITS)?)
        };
        match self {
            Handle::Gpu(gpu) => pack(KIND_GPU, gpu, 0, 0),
            Handle::Mig { gpu, gi, ci } => pack(KIND_MIG, gpu, gi, ci),
            Handle::GpuInstance { gpu, gi } => pack(KIND_GI, gpu, gi, 0),
            Handle::ComputeInstance { gpu, gi, ci } => pack(KIND_CI, gpu, gi, ci),
            Handle::EventSet(n) => Ok(KIND_EVENT_SET << KIND_SHIFT | field(n, KIND_SHIFT)?),
        }
    }

    fn of_code(code: u32) -> Answer<Handle> {
        let mask = |bits: u32| (1u32 << bits) - 1;
        let ci = code & mask(CI_BITS);
        let gi = code >> CI_BITS & mask(GI_BITS);
        let gpu = code >> (GI_BITS + CI_BITS) & mask(GPU_BITS);
        match code >> KIND_SHIFT {
            KIND_GPU if gi == 0 && ci == 0 => Ok(Handle::Gpu(gpu)),
            KIND_MIG => Ok(Handle::Mig { gpu, gi, ci }),
            KIND_GI if ci == 0 => Ok(Handle::GpuInstance { gpu, gi }),
            KIND_CI => Ok(Handle::ComputeInstance { gpu, gi, ci }),
            KIND_EVENT_SET => Ok(Handle::EventSet(code & mask(KIND_SHIFT))),
            _ => Err(INVALID_ARGUMENT),
        }
    }

    /// The address a client is given for this handle.
    pub fn address<T>(self) -> Answer<*mut T> {
        let offset = usize::try_from(self.code()?).map_err(|_| INVALID_ARGUMENT)? * STRIDE;
        Ok(ARENA
            .as_ptr()
            .cast::<u8>()
            .wrapping_add(offset)
            .cast_mut()
            .cast())
    }

    /// What the address a client passed names.
    pub fn of<T>(address: *mut T) -> Answer<Handle> {
        let offset = (address.addr())
            .checked_sub(ARENA.as_ptr().addr())
            .ok_or(INVALID_ARGUMENT)?;
        if offset % STRIDE != 0 || offset / STRIDE >= CODES {
            return Err(INVALID_ARGUMENT);
        }
        Handle::of_code(u32::try_from(offset / STRIDE).map_err(|_| INVALID_ARGUMENT)?)
    }

    /// The device handle a client is given.
    pub fn device(self) -> Answer<sys::nvmlDevice_t> {
        self.address()
    }
}

#[cfg(test)]
mod tests {
    use super::Handle;
    use crate::code::INVALID_ARGUMENT;

    #[test]
    fn handles_round_trip() {
        let all = [
            Handle::Gpu(0),
            Handle::Gpu(63),
            Handle::Mig {
                gpu: 7,
                gi: 14,
                ci: 0,
            },
            Handle::GpuInstance { gpu: 3, gi: 13 },
            Handle::ComputeInstance {
                gpu: 1,
                gi: 2,
                ci: 7,
            },
            Handle::EventSet(8191),
        ];
        for handle in all {
            let address = handle.address::<u8>().unwrap();
            assert!(!address.is_null());
            assert_eq!(Handle::of(address), Ok(handle));
        }
        assert_eq!(Handle::Gpu(64).address::<u8>(), Err(INVALID_ARGUMENT));
    }

    #[test]
    fn foreign_addresses_are_refused() {
        let mut local = 0u64;
        assert_eq!(Handle::of(&raw mut local), Err(INVALID_ARGUMENT));
        assert_eq!(
            Handle::of(std::ptr::null_mut::<u8>()),
            Err(INVALID_ARGUMENT)
        );
        let inside = Handle::Gpu(1).address::<u8>().unwrap().wrapping_add(1);
        assert_eq!(Handle::of(inside), Err(INVALID_ARGUMENT));
    }
}
