//! The server end of the network tests (`iolab sys net --serve`), written
//! for a network that is not trusted: every byte a peer sends is input.
//!
//! - Connections are accepted at once and wait for their 16-byte header in
//!   non-blocking mode, without a thread: a client that connects and sends
//!   nothing (or garbage, or one byte a second) holds no thread and blocks
//!   nobody, and is dropped after [`HEADER_TIMEOUT`]. At most
//!   [`MAX_PENDING`] wait; beyond that the oldest is dropped.
//! - A complete, valid header gets a thread, up to [`MAX_ACTIVE`] at once
//!   (beyond that the connection is closed). An active connection that is
//!   silent for [`IDLE_TIMEOUT`], or does not take its answer within it, is
//!   closed.
//! - Message sizes are bounded by [`MAX_MESSAGE`], and buffers grow with the
//!   bytes that actually arrive, never to a size a peer merely announces.
//! - [`serve`] returns within a fraction of a second of `stop` being set.
//!
//! The protocol is [`super::net`]'s: mode u32 LE, message size u32 LE,
//! count u64 LE; mode 0 echoes messages of that size until EOF, mode 1 reads
//! `count` bytes and answers one byte. UDP datagrams are echoed.

use super::{io_err, Result};
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Echo mode.
pub const MODE_ECHO: u32 = 0;
/// Sink mode.
pub const MODE_SINK: u32 = 1;
/// Connections served at once.
pub const MAX_ACTIVE: usize = 64;
/// Connections waiting for their header at once.
pub const MAX_PENDING: usize = 1024;
/// Time a new connection has to send its header.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(2);
/// Silence (or a peer not reading) tolerated on an active connection.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(5);
/// Largest echo message accepted (the client uses up to 64 KiB).
pub const MAX_MESSAGE: usize = 1 << 20;
/// How often blocked calls look at the stop flag.
const TICK: Duration = Duration::from_millis(100);

struct Pending {
    s: TcpStream,
    got: usize,
    h: [u8; 16],
    since: Instant,
}

/// Serves the other end of the network tests on `addr` (TCP, and UDP on the
/// same port) until `stop` is set; calls `ready` with the bound address.
pub fn serve(addr: SocketAddr, stop: &AtomicBool, ready: &mut dyn FnMut(SocketAddr)) -> Result<()> {
    let listener = TcpListener::bind(addr).map_err(io_err(format!("listen on {addr}")))?;
    let bound = listener.local_addr().map_err(io_err("local address"))?;
    let udp = UdpSocket::bind(bound).map_err(io_err(format!("bind UDP {bound}")))?;
    udp.set_read_timeout(Some(Duration::from_millis(50)))
        .map_err(io_err("UDP timeout"))?;
    listener
        .set_nonblocking(true)
        .map_err(io_err("non-blocking listener"))?;
    ready(bound);
    let active = AtomicUsize::new(0);
    std::thread::scope(|sc| {
        sc.spawn(|| {
            let mut buf = [0u8; 65_536];
            while !stop.load(Ordering::Relaxed) {
                if let Ok((n, from)) = udp.recv_from(&mut buf) {
                    let _ = udp.send_to(&buf[..n], from);
                }
            }
        });
        let mut pending: Vec<Pending> = Vec::new();
        while !stop.load(Ordering::Relaxed) {
            let mut busy = accept_all(&listener, &mut pending);
            // Read what headers have arrived; drop the dead and the slow.
            for p in read_headers(&mut pending, &mut busy) {
                if active.load(Ordering::SeqCst) < MAX_ACTIVE {
                    active.fetch_add(1, Ordering::SeqCst);
                    let active = &active;
                    sc.spawn(move || {
                        handle(p.s, p.h, stop);
                        active.fetch_sub(1, Ordering::SeqCst);
                    });
                }
            }
            if !busy {
                std::thread::sleep(if pending.is_empty() {
                    Duration::from_micros(200)
                } else {
                    Duration::from_millis(1)
                });
            }
        }
    });
    Ok(())
}

/// Takes every connection waiting in the backlog (the oldest pending one
/// goes when there are too many); true when there was any.
fn accept_all(listener: &TcpListener, pending: &mut Vec<Pending>) -> bool {
    let mut busy = false;
    loop {
        match listener.accept() {
            Ok((s, _)) => {
                busy = true;
                if s.set_nonblocking(true).is_err() {
                    continue;
                }
                if pending.len() >= MAX_PENDING {
                    pending.remove(0);
                }
                pending.push(Pending {
                    s,
                    got: 0,
                    h: [0; 16],
                    since: Instant::now(),
                });
            }
            Err(_) => return busy,
        }
    }
}

/// Reads what header bytes have arrived; drops connections that closed,
/// failed or were silent past [`HEADER_TIMEOUT`]; returns those whose
/// 16-byte header is complete. Sets `busy` when any bytes came.
fn read_headers(pending: &mut Vec<Pending>, busy: &mut bool) -> Vec<Pending> {
    let now = Instant::now();
    let mut ready = Vec::new();
    let mut i = 0;
    while i < pending.len() {
        let p = &mut pending[i];
        let done = match p.s.read(&mut p.h[p.got..]) {
            Ok(0) => Some(false),
            Ok(n) => {
                *busy = true;
                p.got += n;
                (p.got == 16).then_some(true)
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                (now.duration_since(p.since) > HEADER_TIMEOUT).then_some(false)
            }
            Err(_) => Some(false),
        };
        match done {
            None => i += 1,
            Some(false) => {
                pending.swap_remove(i);
            }
            Some(true) => ready.push(pending.swap_remove(i)),
        }
    }
    ready
}

/// Reads into `buf` until it is full, the peer is silent for
/// [`IDLE_TIMEOUT`], it closes, or `stop` is set. True when full.
fn fill(s: &mut TcpStream, buf: &mut [u8], stop: &AtomicBool) -> bool {
    let mut got = 0;
    let mut last = Instant::now();
    while got < buf.len() {
        if stop.load(Ordering::Relaxed) || last.elapsed() > IDLE_TIMEOUT {
            return false;
        }
        match s.read(&mut buf[got..]) {
            Ok(0) => return false,
            Ok(n) => {
                got += n;
                last = Instant::now();
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => return false,
        }
    }
    true
}

fn handle(mut s: TcpStream, h: [u8; 16], stop: &AtomicBool) {
    if s.set_nonblocking(false).is_err()
        || s.set_read_timeout(Some(TICK)).is_err()
        || s.set_write_timeout(Some(IDLE_TIMEOUT)).is_err()
    {
        return;
    }
    let _ = s.set_nodelay(true);
    let mode = u32::from_le_bytes([h[0], h[1], h[2], h[3]]);
    let size = u32::from_le_bytes([h[4], h[5], h[6], h[7]]) as usize;
    let count = u64::from_le_bytes([h[8], h[9], h[10], h[11], h[12], h[13], h[14], h[15]]);
    match mode {
        MODE_ECHO if size > 0 && size <= MAX_MESSAGE => {
            // Grows to `size` only as a first message actually arrives.
            let mut buf: Vec<u8> = Vec::new();
            let mut chunk = [0u8; 65_536];
            loop {
                while buf.len() < size {
                    let want = (size - buf.len()).min(chunk.len());
                    if !fill(&mut s, &mut chunk[..want], stop) {
                        return;
                    }
                    buf.extend_from_slice(&chunk[..want]);
                }
                if s.write_all(&buf).is_err() {
                    return;
                }
                buf.clear();
            }
        }
        MODE_SINK => {
            let mut chunk = [0u8; 1 << 16];
            let mut left = count;
            let mut last = Instant::now();
            while left > 0 {
                if stop.load(Ordering::Relaxed) || last.elapsed() > IDLE_TIMEOUT {
                    return;
                }
                match s.read(&mut chunk) {
                    Ok(0) => return,
                    Ok(n) => {
                        left = left.saturating_sub(n as u64);
                        last = Instant::now();
                    }
                    Err(e)
                        if matches!(
                            e.kind(),
                            ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
                        ) => {}
                    Err(_) => return,
                }
            }
            let _ = s.write_all(&[1]);
        }
        // Anything else is garbage: close.
        _ => {}
    }
}
