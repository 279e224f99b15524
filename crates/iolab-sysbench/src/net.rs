//! Network: TCP and UDP round trips by message size, TCP bandwidth and the
//! cost of a TCP connect + close, against a server thread on loopback
//! (127.0.0.1); Unix-socket and pipe round trips for comparison.
//!
//! The same client code can run against [`serve`] on another machine
//! (`iolab sys net --serve PORT` there, `--connect HOST:PORT` here). The
//! protocol: a TCP connection starts with a 16-byte header (mode u32 LE,
//! message size u32 LE, count u64 LE). Mode 0 echoes messages of that size
//! until EOF; mode 1 reads `count` bytes and answers one byte. A
//! connection closed before its header is simply dropped (connect tests).
//! UDP datagrams to the same port are echoed. The server is in
//! [`super::net_server`].

use super::{io_err, Config, Entry, Point, Result, Series, SysError};
use iolab_bench::stats::Stats;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

const MODE_ECHO: u32 = 0;
const MODE_SINK: u32 = 1;
/// Largest UDP payload over IPv4 (65535 - 20 - 8).
const UDP_MAX: usize = 65_507;

fn header(mode: u32, size: u32, count: u64) -> [u8; 16] {
    let mut h = [0u8; 16];
    h[..4].copy_from_slice(&mode.to_le_bytes());
    h[4..8].copy_from_slice(&size.to_le_bytes());
    h[8..].copy_from_slice(&count.to_le_bytes());
    h
}

/// The server: see [`super::net_server`] (concurrent, bounded, with
/// timeouts; every byte from the network is treated as untrusted).
pub use super::net_server::serve;

/// Where the server is, and how to describe it.
struct Peer {
    addr: SocketAddr,
    label: String,
}

/// Runs `f` against a server thread on 127.0.0.1.
fn with_loopback<T>(f: impl FnOnce(&Peer) -> Result<T>) -> Result<T> {
    let stop = AtomicBool::new(false);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::scope(|s| {
        let stop = &stop;
        let h = s.spawn(move || {
            let mut last = Ok(());
            // An ephemeral TCP port may be taken for UDP: try a few.
            for _ in 0..5 {
                let tx = tx.clone();
                last = serve(
                    "127.0.0.1:0".parse().expect("literal address"),
                    stop,
                    &mut |a| {
                        let _ = tx.send(a);
                    },
                );
                if last.is_ok() {
                    break;
                }
            }
            drop(tx);
            last
        });
        let r = match rx.recv() {
            Ok(addr) => f(&Peer {
                addr,
                label: "loopback 127.0.0.1".into(),
            }),
            Err(_) => Err(SysError::Unsupported(
                "loopback server did not start".into(),
            )),
        };
        stop.store(true, Ordering::Relaxed);
        let served = h.join().unwrap_or(Ok(()));
        r.and_then(|v| served.map(|_| v))
    })
}

fn sizes(cfg: &Config<'_>) -> Vec<usize> {
    cfg.scale.pick(
        vec![64, 1024, 65_536],
        vec![64, 256, 1024, 4096, 16_384, 65_536],
        vec![64, 256, 1024, 4096, 16_384, 65_536],
    )
}

fn max_rounds(cfg: &Config<'_>) -> u64 {
    cfg.scale.pick(200, 20_000, 100_000)
}

/// Round trip per size over a byte stream already set up: returns stats per size.
fn stream_rtts(
    cfg: &Config<'_>,
    sizes: &[usize],
    mut open: impl FnMut(usize) -> Result<Box<dyn RwStream>>,
) -> Result<Vec<(usize, Stats, Vec<f64>)>> {
    let mut out = Vec::new();
    for &size in sizes {
        let mut s = open(size)?;
        let mut buf = vec![7u8; size];
        let mut v = Vec::new();
        for _ in 0..cfg.reps() {
            v.push(cfg.per_op(max_rounds(cfg), &mut || {
                s.write_all(&buf).map_err(io_err("send"))?;
                s.read_exact(&mut buf).map_err(io_err("receive"))?;
                Ok(())
            })?);
        }
        out.push((size, Stats::of(&v), v));
    }
    Ok(out)
}

trait RwStream: Read + Write {}
impl<T: Read + Write> RwStream for T {}

fn rtt_entry(name: &str, method: String, rows: Vec<(usize, Stats, Vec<f64>)>) -> Entry {
    let mut e = Entry::new(name, "net", method);
    e.time_ns = rows.first().map(|r| r.1);
    e.notes.push(
        "neither end is pinned: a round trip whose ends sit on two CPUs pays two cross-CPU wake-ups (compare ctx_thread_2cpu), one on a single CPU pays two switches, so repeats can differ a lot"
            .into(),
    );
    e.series.push(Series {
        name: name.into(),
        x_unit: "bytes".into(),
        y_unit: "ns".into(),
        points: rows
            .iter()
            .map(|(x, _, v)| Point::of(*x as f64, v))
            .collect(),
    });
    e
}

fn tcp_rtt_to(cfg: &Config<'_>, peer: &Peer) -> Result<Entry> {
    let sizes = sizes(cfg);
    let rows = stream_rtts(cfg, &sizes, |size| {
        let mut s =
            TcpStream::connect(peer.addr).map_err(io_err(format!("connect {}", peer.addr)))?;
        s.set_nodelay(true).map_err(io_err("TCP_NODELAY"))?;
        s.write_all(&header(MODE_ECHO, size as u32, u64::MAX))
            .map_err(io_err("send header"))?;
        Ok(Box::new(s))
    })?;
    Ok(rtt_entry(
        "tcp_rtt",
        format!(
            "TCP_NODELAY stream to an echo server ({}): send a message, read it back; headline 64 B, series 64 B..64 KiB",
            peer.label
        ),
        rows,
    ))
}

fn udp_rtt_to(cfg: &Config<'_>, peer: &Peer) -> Result<Entry> {
    let bind: SocketAddr = if peer.addr.is_ipv4() {
        "0.0.0.0:0"
    } else {
        "[::]:0"
    }
    .parse()
    .expect("literal address");
    let sock = UdpSocket::bind(bind).map_err(io_err("bind UDP"))?;
    sock.connect(peer.addr).map_err(io_err("connect UDP"))?;
    sock.set_read_timeout(Some(Duration::from_secs(1)))
        .map_err(io_err("UDP timeout"))?;
    let mut rows = Vec::new();
    for size in sizes(cfg).into_iter().map(|s| s.min(UDP_MAX)) {
        let mut buf = vec![5u8; size];
        let mut v = Vec::new();
        for _ in 0..cfg.reps() {
            v.push(cfg.per_op(max_rounds(cfg), &mut || {
                sock.send(&buf).map_err(io_err("UDP send"))?;
                let n = sock
                    .recv(&mut buf)
                    .map_err(io_err("UDP receive (lost datagram?)"))?;
                if n != size {
                    return Err(SysError::Unsupported(format!(
                        "UDP echo returned {n} of {size} bytes"
                    )));
                }
                Ok(())
            })?);
        }
        rows.push((size, Stats::of(&v), v));
    }
    Ok(rtt_entry(
        "udp_rtt",
        format!(
            "UDP datagram to an echo server ({}), wait for the echo; headline 64 B, series 64 B..{UDP_MAX} B (the largest UDP payload)",
            peer.label
        ),
        rows,
    ))
}

fn tcp_bw_to(cfg: &Config<'_>, peer: &Peer) -> Result<Entry> {
    let total: u64 = cfg.scale.pick(16 << 20, 512 << 20, 2048 << 20);
    let chunk = vec![3u8; 1 << 17];
    let stats = cfg.repeat_values(&mut || {
        let mut s =
            TcpStream::connect(peer.addr).map_err(io_err(format!("connect {}", peer.addr)))?;
        s.write_all(&header(MODE_SINK, 0, total))
            .map_err(io_err("send header"))?;
        let t = iolab::primitives::monotonic_ns();
        let mut left = total;
        while left > 0 {
            let n = left.min(chunk.len() as u64) as usize;
            s.write_all(&chunk[..n]).map_err(io_err("send"))?;
            left -= n as u64;
        }
        let mut ack = [0u8];
        s.read_exact(&mut ack).map_err(io_err("receive ack"))?;
        let dt = iolab::primitives::monotonic_ns() - t;
        Ok(total as f64 / (1 << 20) as f64 / (dt as f64 / 1e9))
    })?;
    let mut e = Entry::new(
        "tcp_bw",
        "net",
        format!(
            "one TCP stream to a sink ({}): {} MiB in 128 KiB writes, until the sink's 1-byte ack",
            peer.label,
            total >> 20
        ),
    );
    e.bandwidth_mib_s = Some(stats);
    Ok(e)
}

fn tcp_connect_to(cfg: &Config<'_>, peer: &Peer) -> Result<Entry> {
    // Bounded: every connection leaves a TIME_WAIT socket behind.
    let stats = cfg.repeat_per_op(cfg.scale.pick(50, 300, 500), &mut || {
        let s = TcpStream::connect(peer.addr).map_err(io_err(format!("connect {}", peer.addr)))?;
        drop(s);
        Ok(())
    })?;
    let mut e = Entry::new(
        "tcp_connect",
        "net",
        format!(
            "TCP connect() to a listening server ({}) and close(); client-side time, at most 500 connections per repeat",
            peer.label
        ),
    );
    e.time_ns = Some(stats);
    Ok(e)
}

/// TCP round trip on loopback by message size.
pub fn tcp_rtt(cfg: &Config<'_>) -> Result<Entry> {
    with_loopback(|p| tcp_rtt_to(cfg, p))
}
/// UDP round trip on loopback by message size.
pub fn udp_rtt(cfg: &Config<'_>) -> Result<Entry> {
    with_loopback(|p| udp_rtt_to(cfg, p))
}
/// TCP bandwidth on loopback.
pub fn tcp_bw(cfg: &Config<'_>) -> Result<Entry> {
    with_loopback(|p| tcp_bw_to(cfg, p))
}
/// TCP connect + close on loopback.
pub fn tcp_connect(cfg: &Config<'_>) -> Result<Entry> {
    with_loopback(|p| tcp_connect_to(cfg, p))
}

/// Runs an echo thread on one end of a byte stream for `size`-byte messages.
fn echo_thread<'scope, R, W>(
    s: &'scope std::thread::Scope<'scope, '_>,
    mut r: R,
    mut w: W,
    size: usize,
) where
    R: Read + Send + 'scope,
    W: Write + Send + 'scope,
{
    s.spawn(move || {
        let mut buf = vec![0u8; size];
        while r.read_exact(&mut buf).is_ok() {
            if w.write_all(&buf).is_err() {
                break;
            }
        }
    });
}

/// Unix stream socket round trip between two threads, by size.
pub fn unix_rtt(cfg: &Config<'_>) -> Result<Entry> {
    let sizes = sizes(cfg);
    let rows = std::thread::scope(|sc| {
        stream_rtts(cfg, &sizes, |size| {
            let (a, b) = std::os::unix::net::UnixStream::pair().map_err(io_err("socketpair"))?;
            let b2 = b.try_clone().map_err(io_err("dup socket"))?;
            echo_thread(sc, b, b2, size);
            Ok(Box::new(a))
        })
    })?;
    Ok(rtt_entry(
        "unix_rtt",
        "AF_UNIX stream socket pair, echo thread on the other end; headline 64 B, series 64 B..64 KiB".into(),
        rows,
    ))
}

struct PipePair {
    r: std::fs::File,
    w: std::fs::File,
}
impl Read for PipePair {
    fn read(&mut self, b: &mut [u8]) -> std::io::Result<usize> {
        self.r.read(b)
    }
}
impl Write for PipePair {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.w.write(b)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Pipe round trip between two threads, by size.
pub fn pipe_rtt(cfg: &Config<'_>) -> Result<Entry> {
    let sizes = sizes(cfg);
    let rows = std::thread::scope(|sc| {
        stream_rtts(cfg, &sizes, |size| {
            let (r1, w1) = iolab::primitives::pipe()?;
            let (r2, w2) = iolab::primitives::pipe()?;
            echo_thread(sc, r1, w2, size);
            Ok(Box::new(PipePair { r: r2, w: w1 }))
        })
    })?;
    Ok(rtt_entry(
        "pipe_rtt",
        "two pipes, echo thread on the other end; headline 64 B, series 64 B..64 KiB".into(),
        rows,
    ))
}

/// Runs the TCP and UDP round trips, TCP bandwidth and connect cost
/// against `iolab sys net --serve` on `host_port`.
pub fn remote(cfg: &Config<'_>, host_port: &str) -> Result<Vec<Entry>> {
    let addr = host_port
        .to_socket_addrs()
        .map_err(io_err(format!("resolve {host_port}")))?
        .next()
        .ok_or_else(|| SysError::Unsupported(format!("{host_port} resolves to no address")))?;
    let peer = Peer {
        addr,
        label: format!("remote {addr}"),
    };
    Ok(vec![
        tcp_rtt_to(cfg, &peer)?,
        udp_rtt_to(cfg, &peer)?,
        tcp_bw_to(cfg, &peer)?,
        tcp_connect_to(cfg, &peer)?,
    ])
}
