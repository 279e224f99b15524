//! The `iolab sys net --serve` server against misbehaving
//! clients, on loopback only, bounded in count and time: silent, slow,
//! garbage, abrupt close, a huge announced message, and 500 connections at
//! once. Meanwhile a well-behaved client keeps getting its echoes with
//! bounded latency, nothing crashes, and the server stops when asked.

use iolab_sysbench::net_server::{serve, HEADER_TIMEOUT, MODE_ECHO, MODE_SINK};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

fn header(mode: u32, size: u32, count: u64) -> [u8; 16] {
    let mut h = [0u8; 16];
    h[..4].copy_from_slice(&mode.to_le_bytes());
    h[4..8].copy_from_slice(&size.to_le_bytes());
    h[8..].copy_from_slice(&count.to_le_bytes());
    h
}

/// One well-behaved echo session: connect, header, `rounds` round trips of
/// 64 bytes. Returns the slowest round trip, connect included.
fn good_client(addr: SocketAddr, rounds: usize) -> Duration {
    let t = Instant::now();
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    s.write_all(&header(MODE_ECHO, 64, u64::MAX)).unwrap();
    let mut worst = Duration::ZERO;
    let mut buf = [7u8; 64];
    for i in 0..rounds {
        let r = if i == 0 { t } else { Instant::now() };
        buf[0] = i as u8;
        s.write_all(&buf).expect("send");
        let mut back = [0u8; 64];
        s.read_exact(&mut back).expect("echo");
        assert_eq!(back, buf, "echoed bytes");
        worst = worst.max(r.elapsed());
    }
    worst
}

// Long on purpose: the misbehaving clients must run at once against one
// server, inside one thread scope with it.
#[test]
fn misbehaving_clients_do_not_stop_a_well_behaved_one() {
    let stop = AtomicBool::new(false);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::scope(|sc| {
        let stop = &stop;
        let server = sc.spawn(move || {
            serve("127.0.0.1:0".parse().unwrap(), stop, &mut |a| {
                let _ = tx.send(a);
            })
        });
        let addr: SocketAddr = rx.recv_timeout(Duration::from_secs(10)).expect("server up");
        let mut held: Vec<TcpStream> = Vec::new();
        // Silent: connect and send nothing.
        for _ in 0..20 {
            held.push(TcpStream::connect(addr).unwrap());
        }
        // Garbage: unknown modes, an enormous announced message, random bytes.
        for i in 0..20u32 {
            let mut s = TcpStream::connect(addr).unwrap();
            let h = match i % 4 {
                0 => header(7 + i, 64, 0),
                1 => header(MODE_ECHO, u32::MAX, 0),
                2 => header(MODE_ECHO, 1 << 20, 0), // announced, never sent
                _ => [0xA5u8.wrapping_mul(i as u8 + 1); 16],
            };
            let _ = s.write_all(&h);
            held.push(s);
        }
        // Abrupt close: half a header, or a header and half a message.
        for i in 0..20 {
            let mut s = TcpStream::connect(addr).unwrap();
            if i % 2 == 0 {
                let _ = s.write_all(&header(MODE_ECHO, 64, 0)[..7]);
            } else {
                let _ = s.write_all(&header(MODE_ECHO, 4096, 0));
                let _ = s.write_all(&[1u8; 100]);
            }
            drop(s);
        }
        // A sink that announces a terabyte and sends a little.
        let mut sink = TcpStream::connect(addr).unwrap();
        sink.write_all(&header(MODE_SINK, 0, 1 << 40)).unwrap();
        sink.write_all(&[0u8; 1000]).unwrap();
        held.push(sink);
        // 500 connections at once.
        let mut crowd = Vec::new();
        for _ in 0..500 {
            match TcpStream::connect(addr) {
                Ok(s) => crowd.push(s),
                Err(e) => panic!("connection {} refused: {e}", crowd.len()),
            }
        }
        // Slow: a header one byte at a time, in a thread of its own.
        let slow = sc.spawn(move || {
            let mut s = TcpStream::connect(addr).unwrap();
            for b in header(MODE_ECHO, 64, 0) {
                if s.write_all(&[b]).is_err() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(300));
            }
        });
        // Through all of it, the well-behaved client is served.
        let mut worst = Duration::ZERO;
        for _ in 0..5 {
            worst = worst.max(good_client(addr, 20));
        }
        drop(crowd);
        // And after the header timeout has cleared the silent ones.
        std::thread::sleep(HEADER_TIMEOUT + Duration::from_millis(200));
        worst = worst.max(good_client(addr, 20));
        drop(held);
        slow.join().unwrap();
        // The UDP echo still answers.
        let u = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        u.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        u.send_to(b"ping", addr).unwrap();
        let mut b = [0u8; 16];
        let (n, _) = u.recv_from(&mut b).expect("udp echo");
        assert_eq!(&b[..n], b"ping");
        // Bounded latency: generous for a loaded machine, far below any of
        // the misbehaving clients' timeouts being waited out in turn.
        assert!(worst < Duration::from_secs(5), "worst round trip {worst:?}");
        let t = Instant::now();
        stop.store(true, Ordering::SeqCst);
        server.join().unwrap().expect("server ran");
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "stopping took {:?}",
            t.elapsed()
        );
    });
}
