//! Hot loops compiled for the widest vectors this CPU has, chosen at run
//! time: the release build targets baseline x86-64 (SSE2), where a loop of
//! 64-bit multiplies (the data pattern) runs at a third of the speed that
//! AVX-512's `vpmullq` gives it. The loop is the caller's closure, inlined
//! into a function compiled with the wider target features.

/// Runs `f` compiled with AVX-512 (F, DQ, VL) or AVX2 when the CPU has them,
/// else as it is. `f` must be plain code (no `unsafe` of its own): only
/// the instructions chosen for it change, never what it computes.
#[inline]
pub fn vectorized<R>(f: impl FnOnce() -> R) -> R {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512dq")
            && std::arch::is_x86_feature_detected!("avx512vl")
        {
            // SAFETY: the CPU has every feature `avx512` is compiled for.
            return unsafe { avx512(f) };
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2, the one feature `avx2` needs.
            return unsafe { avx2(f) };
        }
    }
    f()
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq,avx512vl")]
unsafe fn avx512<R>(f: impl FnOnce() -> R) -> R {
    f()
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn avx2<R>(f: impl FnOnce() -> R) -> R {
    f()
}
