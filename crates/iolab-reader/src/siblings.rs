//! Read-ahead across the files of a directory: when `Auto` sees a program
//! open a directory's files one after the other, in the directory's order
//! or by name ([`policy::sibling_streak`]), it asks the kernel for the
//! start of the next few ([`policy::siblings_ahead`]) while the program
//! reads this one. `tar`, `grep -r` and `cp -r` read a tree that way and
//! otherwise wait for the device once per small file, one file at a time.
//!
//! The state is the process's: the directories seen last, each listed
//! (regular files, in `readdir` order and sorted by name) at its second
//! open, so a directory a program opens one file of is never listed.

use super::policy;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

// Every `Auto` open hashes its directory's path here: the standard
// SipHash of a long path cost a tenth of an open of a cached small file,
// byte-at-a-time FNV still showed; FxHash takes the bytes a word at a time
// (nothing here needs a hash that resists chosen keys).
type HashMap<K, V> = std::collections::HashMap<K, V, rustc_hash::FxBuildHasher>;
type HashSet<K> = std::collections::HashSet<K, rustc_hash::FxBuildHasher>;

/// `path`'s directory and name, split at its last `/` (what `parent` and
/// `file_name` give, without walking its components).
fn split(path: &Path) -> Option<(&Path, &OsStr)> {
    let b = path.as_os_str().as_bytes();
    let Some(i) = b.iter().rposition(|&c| c == b'/') else {
        return Some((path.parent()?, path.file_name()?));
    };
    let name = &b[i + 1..];
    if name.is_empty() || name == b"." || name == b".." {
        return Some((path.parent()?, path.file_name()?));
    }
    let dir = if i == 0 { &b[..1] } else { &b[..i] };
    Some((Path::new(OsStr::from_bytes(dir)), OsStr::from_bytes(name)))
}

/// Directories remembered at most (the least recently opened is dropped).
const MAX_DIRS: usize = 256;

/// A directory with more entries is not listed (listing it would cost
/// more than the waits it could save on the few files read next).
const MAX_ENTRIES: usize = 20_000;

/// One order of a directory's files and the opens that followed it.
struct Order {
    names: Vec<OsString>,
    pos: HashMap<OsString, usize>,
    prev: Option<usize>,
    streak: u32,
    asked_to: usize,
}

impl Order {
    fn new(names: Vec<OsString>) -> Order {
        let pos = names
            .iter()
            .enumerate()
            .map(|(i, n)| (n.clone(), i))
            .collect::<HashMap<_, _>>();
        Order {
            names,
            pos,
            prev: None,
            streak: 0,
            asked_to: 0,
        }
    }

    /// Notes an open of `name`; returns the files to ask for.
    fn opened(&mut self, name: &OsStr) -> &[OsString] {
        let Some(&at) = self.pos.get(name) else {
            self.prev = None;
            self.streak = 0;
            return &[];
        };
        self.streak = policy::sibling_streak(self.streak, self.prev, at);
        self.prev = Some(at);
        if self.streak == 0 {
            // A new pass (the program, or the same one reading the tree
            // again once its pages may be gone): ask again.
            self.asked_to = 0;
        }
        let r = policy::siblings_ahead(self.streak, at, self.asked_to, self.names.len());
        if !r.is_empty() {
            self.asked_to = r.end;
        }
        &self.names[r]
    }
}

/// What is known of one directory.
struct Dir {
    /// The first file opened, until the second comes and the directory
    /// is listed.
    first: Option<OsString>,
    /// `readdir` order and by name; `None` before the listing or when the
    /// directory could not be listed or is too large.
    orders: Option<[Order; 2]>,
    /// Files asked for already (by either order).
    asked: HashSet<OsString>,
    /// The last file opened here that was not asked for had its first
    /// page cached, or a file about to be asked for was partly cached: the
    /// tree is in memory, or what the program reads of it, and asking
    /// would only cost opens.
    warm: bool,
    /// Opens of this directory while it was warm whose probe was skipped.
    skipped: u32,
    used: u64,
}

/// The regular files of `dir`, in `readdir` order (file types from the
/// directory entries: no `stat` per file).
fn list(dir: &Path) -> Option<Vec<OsString>> {
    let mut names = Vec::new();
    for e in std::fs::read_dir(dir).ok()? {
        let e = e.ok()?;
        if names.len() >= MAX_ENTRIES {
            return None;
        }
        if e.file_type().ok()?.is_file() {
            names.push(e.file_name());
        }
    }
    Some(names)
}

struct State {
    /// By the directory's path as bytes (a `Path` hashes component by
    /// component, which cost more than the rest of the bookkeeping).
    dirs: HashMap<OsString, Dir>,
    clock: u64,
}

static STATE: Mutex<Option<State>> = Mutex::new(None);

/// The two orders of `dir`'s files (`readdir`'s and by name), with the
/// open of `first` counted; None when it cannot be listed or is too large.
fn orders(dir: &Path, first: &OsStr) -> Option<[Order; 2]> {
    list(dir).map(|names| {
        let mut sorted = names.clone();
        sorted.sort();
        let mut o = [Order::new(names), Order::new(sorted)];
        for x in &mut o {
            x.opened(first);
        }
        o
    })
}

/// A directory's first open: remembered (the least recently opened one
/// let go when [`MAX_DIRS`] are), not listed yet.
fn first_open(st: &mut State, dir: &Path, name: &OsStr, cached: Option<bool>, clock: u64) {
    if st.dirs.len() >= MAX_DIRS {
        if let Some(old) = st
            .dirs
            .iter()
            .min_by_key(|(_, d)| d.used)
            .map(|(k, _)| k.clone())
        {
            st.dirs.remove(&old);
        }
    }
    let d = Dir {
        first: Some(name.to_os_string()),
        orders: None,
        asked: HashSet::default(),
        warm: cached == Some(true),
        skipped: 0,
        used: clock,
    };
    st.dirs.insert(dir.as_os_str().to_os_string(), d);
}

/// What the first, locked step of [`note`] found.
enum Seen {
    /// Nothing to ask for (a first open, or a warm directory).
    Done,
    /// The directory's second open: list it (outside the lock), counting
    /// this first open.
    List(OsString),
    /// Listed before, or being listed: see what to ask for.
    Listed,
}

/// The process's state, locked, for `f`.
fn with_state<T>(f: impl FnOnce(&mut State) -> T) -> T {
    let mut g = STATE.lock().unwrap_or_else(|e| e.into_inner());
    f(g.get_or_insert_with(|| State {
        dirs: HashMap::default(),
        clock: 0,
    }))
}

/// Notes that `path` was opened (`cached`: whether the page its first
/// read starts in was in the page cache, when known) and returns the files of its directory to
/// ask for (see the module's documentation). The directory is listed
/// between two holds of the process's lock, not under it: `readdir` of a
/// directory whose blocks are not cached waits for the device, and every
/// other thread's open would wait behind it.
fn note(path: &Path, cached: Option<bool>) -> Vec<PathBuf> {
    let Some((dir, name)) = split(path) else {
        return Vec::new();
    };
    let listed = match with_state(|st| seen(st, dir, name, cached)) {
        Seen::Done => return Vec::new(),
        Seen::List(first) => Some(orders(dir, &first)),
        Seen::Listed => None,
    };
    with_state(|st| to_ask(st, dir, name, listed))
}

/// The first step of [`note`]: the open counted, the directory's warmth
/// updated, and whether it is to be listed now.
fn seen(st: &mut State, dir: &Path, name: &OsStr, cached: Option<bool>) -> Seen {
    st.clock += 1;
    let clock = st.clock;
    let Some(d) = st.dirs.get_mut(dir.as_os_str()) else {
        first_open(st, dir, name, cached, clock);
        return Seen::Done;
    };
    d.used = clock;
    // Only a file this did not ask for says whether the tree is cached.
    if let Some(c) = cached {
        if !d.asked.contains(name) {
            d.warm = c;
        }
    }
    if d.warm {
        // Nothing to gain: neither list the directory nor ask; the open
        // waits as the first one until the files are not cached.
        if d.orders.is_none() && d.first.as_deref() != Some(name) {
            d.first = Some(name.to_os_string());
        }
        return Seen::Done;
    }
    // The second open takes the first: an open while it is listed finds
    // neither and asks for nothing.
    d.first.take().map_or(Seen::Listed, Seen::List)
}

/// The second step of [`note`]: the listing kept (when this open made
/// one), and the files to ask for after `name`.
fn to_ask(
    st: &mut State,
    dir: &Path,
    name: &OsStr,
    listed: Option<Option<[Order; 2]>>,
) -> Vec<PathBuf> {
    // Gone when MAX_DIRS others were opened meanwhile.
    let Some(d) = st.dirs.get_mut(dir.as_os_str()) else {
        return Vec::new();
    };
    if let Some(o) = listed {
        d.orders = o;
    }
    let Some(orders) = d.orders.as_mut() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    if orders.iter().all(|o| o.streak == 0) {
        d.asked.clear();
    }
    for o in orders.iter_mut() {
        for n in o.opened(name) {
            if d.asked.insert(n.clone()) {
                out.push(dir.join(n));
            }
        }
    }
    out
}

/// In a directory found warm, only one file in this many has the page
/// its first read starts in probed: the others are taken as cached too (the probe is a
/// system call; opens of a cached tree are what it is cheapest to leave
/// alone).
pub const WARM_PROBE_EVERY: u32 = 16;

/// Whether `path`'s directory was found warm and this open may skip its
/// probe (see [`WARM_PROBE_EVERY`]).
fn skip_probe(path: &Path) -> bool {
    let Some((dir, _)) = split(path) else {
        return false;
    };
    let mut g = STATE.lock().unwrap_or_else(|e| e.into_inner());
    let Some(d) = g.as_mut().and_then(|st| st.dirs.get_mut(dir.as_os_str())) else {
        return false;
    };
    if !d.warm {
        return false;
    }
    d.skipped += 1;
    d.skipped % WARM_PROBE_EVERY != 0
}

/// Environment variable that turns this read-ahead off (`1`), to measure
/// what it saves.
pub const OFF_ENV: &str = "IOLAB_NO_SIBLINGS";

/// Whether [`OFF_ENV`] is set (read once: an environment look-up per open
/// showed in replays of thousands of opens).
fn off() -> bool {
    static OFF: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *OFF.get_or_init(|| std::env::var_os(OFF_ENV).is_some_and(|v| v != "0"))
}

/// What a file's first read found of the page it starts in (by default:
/// nothing).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct First {
    /// Whether that page is in the page cache (None where `cachestat(2)`
    /// is missing), which `Auto` takes as its first guess of the file's
    /// residency.
    pub(crate) cached: Option<bool>,
    /// Taken as cached without a probe: its directory was found warm (a
    /// cached tree, not a start a read-ahead across it brought in).
    pub(crate) warm_dir: bool,
}

/// Notes that `path`, opened by `Auto`, is first read at `at`; asks the
/// kernel for the first [`policy::SIBLING_BYTES`] of each file the policy
/// picks (`POSIX_FADV_WILLNEED`: the reads are queued, not waited for),
/// and says what it found of the page at `at`. That page, not the
/// file's first: a program run again finds in memory what it read the
/// first time, which need not be the start (`tail` reads each file's end,
/// a column store its footer), and a probe of the first page took such a
/// tree for cold at every open: a second `tail -n 3` over 500 logs spent
/// a probe per file, and a read-ahead across the directory, on data it
/// then found cached.
pub(crate) fn opened(path: &Path, file: &std::fs::File, at: u64, trace: bool) -> First {
    let probed = |cached| First {
        cached,
        warm_dir: false,
    };
    if !off() && skip_probe(path) {
        return First {
            cached: Some(true),
            warm_dir: true,
        };
    }
    // Whether the page read first is cached (cachestat: no I/O; a
    // RWF_NOWAIT read would start a small read-ahead, and the program's
    // own read then wait for two): a cached tree is not asked for (it
    // cost `grep -r` over a cached tree an open per file for nothing).
    let cached = iolab::kernel::fs::cached_pages(file, at, 1).map(|n| n > 0);
    if off() {
        return probed(cached);
    }
    let ask = note(path, cached);
    if ask.is_empty() {
        return probed(cached);
    }
    let mut read_before = false;
    for p in &ask {
        if let Ok(f) = std::fs::File::open(p) {
            read_before |= ask_for(&f) == Sibling::Cached;
        }
    }
    if read_before {
        mark_warm(path);
    }
    if trace {
        eprintln!(
            "policy: {}: opened in its directory's order: asked for the start of {} file(s) after it, up to {}",
            path.display(),
            ask.len(),
            ask.last().map_or(String::new(), |p| p.display().to_string())
        );
    }
    probed(cached)
}

/// Asks the kernel for the start of a sibling ([`policy::SIBLING_BYTES`])
/// unless some of it is cached already: a program run again finds what it
/// read of the file the first time in memory, and need not be the start
/// (`tail` reads each file's end). The kernel would read the rest from
/// the device for nothing, and a second `tail -n 3` over 500 logs took
/// 2.6 times a bare `pread` replay's time, most of it in the `fadvise`
/// calls that submitted those reads. `cachestat(2)` reads nothing; where
/// it is missing, the start is asked for.
fn ask_for(f: &std::fs::File) -> Sibling {
    let cached = iolab::kernel::fs::cached_pages(f, 0, policy::SIBLING_BYTES);
    if cached.is_some_and(|pages| pages > 0) {
        return Sibling::Cached;
    }
    match iolab::kernel::fs::fadvise_range(f, 0, policy::SIBLING_BYTES, libc::POSIX_FADV_WILLNEED) {
        Ok(()) => Sibling::Asked,
        Err(_) => Sibling::Refused,
    }
}

/// What [`ask_for`] did with a sibling.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Sibling {
    /// Its start was asked for.
    Asked,
    /// Some of its start was cached: not asked for.
    Cached,
    /// The kernel refused the advice.
    Refused,
}

/// Takes `path`'s directory as warm, as when a file not asked for had its
/// first page cached: a sibling found partly cached says the program read
/// this tree before, and its next opens need no probe or read-ahead.
fn mark_warm(path: &Path) {
    let Some((dir, _)) = split(path) else {
        return;
    };
    let mut g = STATE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(d) = g.as_mut().and_then(|st| st.dirs.get_mut(dir.as_os_str())) {
        d.warm = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sibling_of_which_anything_is_cached_is_not_asked_for() {
        use std::os::unix::fs::FileExt;
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("log");
        std::fs::write(&p, vec![7u8; 64 << 10]).unwrap();
        iolab::cache::evict(&p).unwrap();
        let f = std::fs::File::open(&p).unwrap();
        assert_eq!(
            iolab::kernel::fs::cached_pages(&f, 0, 64 << 10),
            Some(0),
            "cachestat(2) missing (Linux 6.5 and later) or the eviction did not take"
        );
        // Its end read, as `tail` reads it: the start is not asked for.
        let mut end = [0u8; 100];
        f.read_exact_at(&mut end, (64 << 10) - 100).unwrap();
        assert_eq!(ask_for(&f), Sibling::Cached);
        assert_eq!(
            iolab::kernel::fs::cached_pages(&f, 0, 4096),
            Some(0),
            "the start was read"
        );
        // Nothing of it cached: asked for.
        iolab::cache::evict(&p).unwrap();
        assert_eq!(ask_for(&f), Sibling::Asked);
    }

    /// Log `i` of [`logs_read_at_their_ends`].
    fn log(d: &Path, i: usize) -> PathBuf {
        d.join(format!("log{i:02}"))
    }

    /// Twelve 64 KiB logs in `d`, evicted, then read at their last 100
    /// bytes (what `tail` read of each the first time); the offset read.
    fn logs_read_at_their_ends(d: &Path) -> u64 {
        use std::os::unix::fs::FileExt;
        let end = (64 << 10) - 100;
        for i in 0..12 {
            std::fs::write(log(d, i), vec![b'x'; 64 << 10]).unwrap();
            iolab::cache::evict(&log(d, i)).unwrap();
            let f = std::fs::File::open(log(d, i)).unwrap();
            f.read_exact_at(&mut [0u8; 100], end).unwrap();
        }
        end
    }

    /// Nothing of the logs' starts was read ahead.
    fn assert_starts_not_cached(d: &Path) {
        for i in 0..12 {
            let f = std::fs::File::open(log(d, i)).unwrap();
            assert_eq!(
                iolab::kernel::fs::cached_pages(&f, 0, 4096),
                Some(0),
                "file {i}: its start was read ahead"
            );
        }
    }

    #[test]
    fn a_tree_whose_files_were_read_at_their_ends_is_taken_as_warm() {
        let d = tempfile::tempdir().unwrap();
        let d = d.path();
        logs_read_at_their_ends(d);
        let probe = std::fs::File::open(log(d, 0)).unwrap();
        assert_eq!(
            iolab::kernel::fs::cached_pages(&probe, 0, 4096),
            Some(0),
            "cachestat(2) missing (Linux 6.5 and later) or the eviction did not take"
        );
        // Probed at their first pages (a program that reads the tree
        // from each file's start), which are not cached: the directory is
        // cold until the files to ask for are found partly cached; then
        // it is warm and the opens skip the probe.
        let mut warm_at = None;
        for i in 0..8 {
            let f = std::fs::File::open(log(d, i)).unwrap();
            if opened(&log(d, i), &f, 0, false).warm_dir {
                warm_at.get_or_insert(i);
            }
        }
        assert!(warm_at.is_some_and(|i| i <= 3), "{warm_at:?}");
        assert_starts_not_cached(d);
    }

    #[test]
    fn a_tree_read_again_at_the_ends_its_files_were_read_at_is_warm_at_once() {
        let d = tempfile::tempdir().unwrap();
        let d = d.path();
        let end = logs_read_at_their_ends(d);
        // Probed where the program reads (the end, cached), the first
        // file says the tree is warm, and every later open is taken as
        // cached without a probe until the next refresh.
        let first: Vec<First> = (0..12)
            .map(|i| {
                let f = std::fs::File::open(log(d, i)).unwrap();
                opened(&log(d, i), &f, end, false)
            })
            .collect();
        assert_eq!(
            first[0],
            First {
                cached: Some(true),
                warm_dir: false
            },
            "cachestat(2) missing (Linux 6.5 and later) or the end not cached"
        );
        assert!(first[1..].iter().all(|f| f.warm_dir), "{first:?}");
        assert_starts_not_cached(d);
    }

    #[test]
    fn an_open_while_its_directory_is_listed_asks_for_nothing_and_the_listing_is_kept() {
        let d = tempfile::tempdir().unwrap();
        for i in 0..20 {
            std::fs::write(d.path().join(format!("f{i:02}")), b"x").unwrap();
        }
        let p = |i: usize| d.path().join(format!("f{i:02}"));
        let dir = d.path();
        let name = |i: usize| OsString::from(format!("f{i:02}"));
        assert!(note(&p(0), Some(false)).is_empty());
        // The second open is handed the first to list, and the lock is
        // free while it lists: another open of the directory goes through
        // (here, on this thread: it would deadlock under the lock) and
        // asks for nothing, as the listing is not there yet.
        let Seen::List(first) = with_state(|st| seen(st, dir, &name(1), Some(false))) else {
            panic!("the second open should list the directory");
        };
        assert_eq!(first, name(0));
        assert!(note(&p(2), Some(false)).is_empty());
        // The listing lands, counting the first open and this one: f00,
        // f01 in a row by name.
        let listed = Some(orders(dir, &first));
        assert!(with_state(|st| to_ask(st, dir, &name(1), listed)).is_empty());
        // It is kept: the next open in order (f02, the third in a row)
        // asks for the files after it.
        let asked = note(&p(2), Some(false));
        for w in (3..3 + policy::SIBLINGS_AHEAD).map(p) {
            assert!(asked.contains(&w), "{w:?} not in {asked:?}");
        }
    }

    #[test]
    fn opens_in_name_order_ask_for_the_files_after_them_once() {
        let d = tempfile::tempdir().unwrap();
        for i in 0..20 {
            std::fs::write(d.path().join(format!("f{i:02}")), b"x").unwrap();
        }
        std::fs::create_dir(d.path().join("sub")).unwrap();
        let p = |i: usize| d.path().join(format!("f{i:02}"));
        // Out of order: nothing.
        assert!(note(&p(5), Some(false)).is_empty());
        assert!(note(&p(1), Some(false)).is_empty());
        // f02, f03 follow f01 by name: the streak reaches 2 at f03.
        assert!(note(&p(2), Some(false)).is_empty());
        let first = note(&p(3), Some(false));
        let want: Vec<PathBuf> = (4..4 + policy::SIBLINGS_AHEAD).map(p).collect();
        // The readdir order may list them the same way; every file asked
        // for is one of those, and all of them are.
        for w in &want {
            assert!(first.contains(w), "{w:?} not in {first:?}");
        }
        // The next open asks for one more by name, not the others again.
        let next = note(&p(4), Some(true));
        assert!(next.contains(&p(4 + policy::SIBLINGS_AHEAD)), "{next:?}");
        assert!(!next.iter().any(|x| want.contains(x)), "{next:?}");
        // The directory is never asked for.
        assert!(!first.iter().chain(&next).any(|x| x.ends_with("sub")));
        // A second pass over the directory (a program run again, the files
        // gone from memory): the same files are asked for again.
        for i in 0..2 {
            assert!(note(&p(i), Some(false)).is_empty(), "{i}");
        }
        let again = note(&p(2), Some(false));
        for w in (3..3 + policy::SIBLINGS_AHEAD).map(p) {
            assert!(again.contains(&w), "{w:?} not in {again:?}");
        }
    }

    #[test]
    fn paths_split_at_their_last_slash_as_parent_and_file_name_do() {
        for p in ["/a/b/c.txt", "a/b", "/top", "rel", "/a/b/", "/a/..", "."] {
            let p = Path::new(p);
            let want = p.parent().zip(p.file_name());
            assert_eq!(split(p), want, "{}", p.display());
        }
    }

    #[test]
    fn the_probe_tells_a_cached_first_page_from_an_evicted_one() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("f");
        std::fs::write(&path, vec![1u8; 64 << 10]).unwrap();
        let f = std::fs::File::open(&path).unwrap();
        let Some(n) = iolab::kernel::fs::cached_pages(&f, 0, 1) else {
            iolab::require!(false, "no cachestat(2) in this kernel");
            return;
        };
        assert_eq!(n, 1, "a file just written is cached");
        iolab::cache::evict(&path).unwrap();
        let after = iolab::kernel::fs::cached_pages(&f, 0, 1).unwrap();
        iolab::require!(
            after == 0,
            "{} stays cached after eviction (tmpfs?)",
            path.display()
        );
    }

    #[test]
    fn opens_in_a_warm_directory_probe_one_time_in_sixteen() {
        let d = tempfile::tempdir().unwrap();
        let p = |i: usize| d.path().join(format!("h{i:02}"));
        // Unknown directory: probe.
        assert!(!skip_probe(&p(0)));
        // Found warm by two opens: from then on most opens skip the probe.
        note(&p(0), Some(true));
        note(&p(1), Some(true));
        let skips = (0..WARM_PROBE_EVERY).filter(|_| skip_probe(&p(2))).count();
        assert_eq!(skips as u32, WARM_PROBE_EVERY - 1);
        // A probe that finds the tree cold again: no more skipping.
        note(&p(3), Some(false));
        assert!(!skip_probe(&p(4)));
    }

    #[test]
    fn a_cached_tree_is_not_asked_for() {
        let d = tempfile::tempdir().unwrap();
        for i in 0..20 {
            std::fs::write(d.path().join(format!("g{i:02}")), b"x").unwrap();
        }
        let p = |i: usize| d.path().join(format!("g{i:02}"));
        // Opens in name order of files found cached: nothing asked for,
        // however long the streak.
        for i in 0..10 {
            assert!(note(&p(i), Some(true)).is_empty(), "{i}");
        }
        // Then one not cached (not asked for: the tree left memory): the
        // directory is listed now, counting the open before it, and asking
        // starts at the third open in a row in its order.
        assert!(note(&p(10), Some(false)).is_empty());
        let ask = note(&p(11), Some(false));
        assert!(ask.contains(&p(12)), "{ask:?}");
    }
}
