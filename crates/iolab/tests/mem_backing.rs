//! `--mem`: the backing a buffer pool records is the backing it got,
//! checked independently through the page flags (`/proc/self/pagemap` and
//! `/proc/kpageflags`, which need root) rather than the smaps text the
//! record itself is read from.

use iolab::buf::{BufId, BufPool};
use iolab::mem::MemKind;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};

use iolab::require;

fn read_u64(f: &mut File, index: u64) -> Option<u64> {
    let mut b = [0u8; 8];
    f.seek(SeekFrom::Start(index * 8)).ok()?;
    f.read_exact(&mut b).ok()?;
    Some(u64::from_le_bytes(b))
}

/// Bytes of `addr..addr+len` whose pages the kernel flags as huge (THP or
/// hugetlb), or None when the page flags cannot be read.
fn huge_bytes_by_page_flags(addr: usize, len: usize) -> Option<u64> {
    const KPF_HUGE: u64 = 1 << 17;
    const KPF_THP: u64 = 1 << 22;
    let mut pagemap = File::open("/proc/self/pagemap").ok()?;
    let mut flags = File::open("/proc/kpageflags").ok()?;
    let mut huge = 0;
    for page in (addr / 4096)..(addr + len).div_ceil(4096) {
        let e = read_u64(&mut pagemap, page as u64)?;
        let pfn = e & ((1 << 55) - 1);
        if e >> 63 == 0 || pfn == 0 {
            return None; // not present, or PFNs hidden (no CAP_SYS_ADMIN)
        }
        if read_u64(&mut flags, pfn)? & (KPF_HUGE | KPF_THP) != 0 {
            huge += 4096;
        }
    }
    Some(huge)
}

fn check(mem: MemKind) -> Option<(u64, u64)> {
    let p = BufPool::with_mem(2, 1 << 20, 4096, mem).unwrap();
    let b = p.backing();
    assert_eq!(b.mem, mem);
    assert_eq!(b.bytes, 2 << 20);
    let addr = p.slot(BufId(0)).as_ptr() as usize;
    let flagged = huge_bytes_by_page_flags(addr, 2 << 20)?;
    Some((b.huge_bytes.expect("smaps readable"), flagged))
}

#[test]
fn thp_and_malloc_pools_record_the_backing_they_got() {
    require!(
        huge_bytes_by_page_flags(&0u8 as *const u8 as usize & !4095, 4096).is_some(),
        "page flags need root (/proc/kpageflags)"
    );
    for mem in [MemKind::Thp, MemKind::Malloc] {
        let (recorded, flagged) = check(mem).unwrap();
        assert_eq!(
            recorded, flagged,
            "{mem}: record says {recorded} huge bytes, page flags {flagged}"
        );
    }
    let thp_mode =
        std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled").unwrap_or_default();
    if !thp_mode.contains("[never]") {
        // With THP available the advised, aligned pool should be huge; a
        // fragmented machine may refuse, which the record then says.
        let (recorded, _) = check(MemKind::Thp).unwrap();
        eprintln!("thp pool: {recorded} of {} bytes in huge pages", 2 << 20);
    }
}

#[test]
fn hugetlb_is_backed_or_says_why_not() {
    let free = iolab::mem::hugetlb_info().map(|(_, f)| f).unwrap_or(0);
    match BufPool::with_mem(1, 1 << 20, 4096, MemKind::Hugetlb) {
        Ok(p) => {
            let b = p.backing();
            assert!(b.all_huge(), "hugetlb pool not in huge pages: {b:?}");
        }
        Err(e) => {
            let m = e.to_string();
            assert!(free == 0, "{free} huge pages free, yet: {m}");
            assert!(
                m.contains("nr_hugepages") && m.contains("--mem hugetlb"),
                "{m}"
            );
        }
    }
}

#[test]
fn buffered_pools_start_where_this_machine_copies_fastest_and_direct_ones_stay_aligned() {
    use iolab::engine::{EngineConfig, EngineOpts};
    // The buffered default is measured (+0 or +16 past a page).
    let measured = iolab::buf::buffered_slot_offset();
    assert!(iolab::buf::COPY_OFFSETS.contains(&measured));
    for (direct, asked, want) in [
        (false, None, measured),
        (true, None, 0),
        (false, Some(0), 0),
        (false, Some(40), 40),
    ] {
        let cfg = EngineConfig {
            files: vec![],
            qd: 2,
            max_len: 4096,
            mem_align: 4096,
            direct,
            opts: EngineOpts {
                buf_offset: asked,
                ..Default::default()
            },
        };
        let mut pool = cfg.pool().unwrap();
        assert_eq!(pool.backing().slot_offset as usize, want);
        for i in 0..2 {
            let s = pool.slot_mut(BufId(i));
            assert_eq!(s.len(), 4096);
            assert_eq!(
                s.as_ptr() as usize % 4096,
                want,
                "direct {direct}, asked {asked:?}"
            );
        }
    }
}
