//! Output allocation helpers.

/// Below this many bytes an allocation is left to the allocator's defaults.
const HUGE_PAGE_MIN_BYTES: usize = 4 << 20;

/// Asks the kernel to back a large buffer with transparent huge pages (Linux `madvise` mode);
/// streaming loops over 4 KiB pages were measured 0-15% slower. A no-op elsewhere.
pub(crate) fn advise_huge_pages(ptr: *mut u8, bytes: usize) {
    if bytes < HUGE_PAGE_MIN_BYTES {
        return;
    }
    #[cfg(target_os = "linux")]
    {
        const MADV_HUGEPAGE: i32 = 14;
        const PAGE: usize = 4096;
        extern "C" {
            fn madvise(addr: *mut std::ffi::c_void, len: usize, advice: i32) -> i32;
        }
        let start = (ptr as usize).next_multiple_of(PAGE);
        let end = (ptr as usize + bytes) & !(PAGE - 1);
        if end > start {
            // SAFETY: the range lies inside one live allocation; madvise only changes paging
            // policy and its failure is harmless.
            unsafe {
                madvise(start as *mut std::ffi::c_void, end - start, MADV_HUGEPAGE);
                // Fault the huge pages in from this thread: concurrent huge-page faults from
                // rayon workers were measured 1.7x slower than faulting them one by one.
                let mut page = start;
                while page < end {
                    (page as *mut u8).write_volatile(0);
                    page += 2 << 20;
                }
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = ptr;
}

/// `n` elements of all zero bits, allocated fallibly with `alloc_zeroed` (calloc: a large
/// buffer comes from fresh zero pages, not written here) and advised onto huge pages; `None`
/// where the allocation fails.
///
/// # Safety
/// All zero bits must be a valid `T`.
unsafe fn zeroed_vec<T>(n: usize) -> Option<Vec<T>> {
    if n == 0 || size_of::<T>() == 0 {
        return Some(Vec::new());
    }
    let layout = std::alloc::Layout::array::<T>(n).ok()?;
    // SAFETY: `layout` has a non-zero size.
    let ptr = unsafe { std::alloc::alloc_zeroed(layout) } as *mut T;
    if ptr.is_null() {
        return None;
    }
    advise_huge_pages(ptr as *mut u8, layout.size());
    // SAFETY: `ptr` is a fresh allocation of `n` elements with `T`'s layout, all zero bits,
    // which the caller guarantees is a valid `T`.
    Some(unsafe { Vec::from_raw_parts(ptr, n, n) })
}

/// A standard-layout array of `dim` whose elements are all zero bits (zero, `false`, 0+0i: valid
/// for every element type), from [`zeroed_vec`]: no pass over the elements (the pages are
/// faulted in by the first writer, or a huge page at a time by [`advise_huge_pages`]).
/// `OutOfMemory` names the shape and bytes.
pub(crate) fn try_zeroed<T: crate::Element, D: ndarray::Dimension>(
    dim: &D,
) -> crate::Result<ndarray::Array<T, D>> {
    // SAFETY: zero bits are a valid value of every element type.
    unsafe { zeroed_array(dim) }
}

/// [`try_zeroed`] for the FFT's element types (real and complex floats), which generic FFT code
/// names without the [`Element`](crate::Element) bound.
pub(crate) fn try_zeroed_fft<T: crate::fft::FftElement, D: ndarray::Dimension>(
    dim: &D,
) -> crate::Result<ndarray::Array<T, D>> {
    // SAFETY: `FftElement` is sealed: its types are f32, f64 and their complex numbers, for
    // which zero bits are zero.
    unsafe { zeroed_array(dim) }
}

/// # Safety
/// All zero bits must be a valid `T`.
unsafe fn zeroed_array<T, D: ndarray::Dimension>(dim: &D) -> crate::Result<ndarray::Array<T, D>> {
    let n = checked_len::<T>(dim)?;
    // SAFETY: the caller's contract.
    let v = unsafe { zeroed_vec::<T>(n) }.ok_or_else(|| out_of_memory(dim, n * size_of::<T>()))?;
    ndarray::Array::from_shape_vec(dim.clone(), v).map_err(|_| too_large(dim))
}

/// Grows `v` to at least `n` zero elements: a fresh zeroed allocation ([`zeroed_vec`]) rather
/// than `resize`, which writes every new element and faults its 4 KiB pages one by one. Aborts
/// on allocation failure, as `Vec` growth does.
pub(crate) fn grow_zeroed<T: crate::fft::FftReal>(v: &mut Vec<num_complex::Complex<T>>, n: usize) {
    if v.len() >= n {
        return;
    }
    // SAFETY: zero bits are 0 + 0i for a complex float.
    match unsafe { zeroed_vec(n) } {
        Some(fresh) => *v = fresh,
        None => match std::alloc::Layout::array::<num_complex::Complex<T>>(n) {
            Ok(layout) => std::alloc::handle_alloc_error(layout),
            Err(_) => panic!("capacity overflow: {n} complex elements"),
        },
    }
}

/// A standard-layout array of `dim` with uninitialised elements, allocated fallibly and
/// advised onto huge pages.
pub(crate) fn try_uninit<T, D: ndarray::Dimension>(
    dim: &D,
) -> crate::Result<ndarray::Array<std::mem::MaybeUninit<T>, D>> {
    let n = checked_len::<T>(dim)?;
    let mut v: Vec<std::mem::MaybeUninit<T>> = Vec::new();
    v.try_reserve_exact(n)
        .map_err(|_| out_of_memory(dim, n * size_of::<T>()))?;
    // SAFETY: the capacity is `n`, and `MaybeUninit` needs no initialisation.
    unsafe { v.set_len(n) };
    advise_huge_pages(v.as_mut_ptr() as *mut u8, n * size_of::<T>());
    ndarray::Array::from_shape_vec(dim.clone(), v).map_err(|_| too_large(dim))
}

/// A standard-layout copy of `view`, in memory from [`try_uninit`] (huge pages for a large
/// copy: a plain `to_owned` faults its 4 KiB pages one by one).
pub(crate) fn try_to_owned<T: Copy, D: ndarray::Dimension>(
    view: ndarray::ArrayView<'_, T, D>,
) -> crate::Result<ndarray::Array<T, D>> {
    let mut out = try_uninit::<T, D>(&view.raw_dim())?;
    view.assign_to(&mut out);
    // SAFETY: `assign_to` wrote every element.
    Ok(unsafe { out.assume_init() })
}

/// The element count of `dim`, checked as ndarray and the allocator need it.
fn checked_len<T>(dim: &impl ndarray::Dimension) -> crate::Result<usize> {
    crate::shape::byte_size(dim.slice(), size_of::<T>())?;
    Ok(dim.size())
}

fn too_large(dim: &impl ndarray::Dimension) -> crate::Error {
    crate::Error::TooLarge {
        shape: dim.slice().to_vec(),
    }
}

fn out_of_memory(dim: &impl ndarray::Dimension, bytes: usize) -> crate::Error {
    crate::Error::OutOfMemory {
        shape: dim.slice().to_vec(),
        bytes,
    }
}
