// SPDX-License-Identifier: MIT
//! bench_bytes - the workloads of perf/bench_core.c that the Rust `bytes`
//! crate can express, run on `bytes::Bytes`.
//!
//! It speaks benchutil.h's protocol, so perf/run-core.sh runs it as one
//! more peer: `[-r R] [-C] [-q] [-l] [FILTER...]`, BL_BENCH_ITERS, the same
//! calibration (20 ms floor, 0.25 s per measured call) and the same
//! `RESULT <workload> <value> ns` lines.  Translations:
//!  - substr_100: a Bytes holding 1024 x 4 KiB (one contiguous block;
//!    Bytes has no segments), already shared by a second handle as the
//!    raws of bench_core are; one operation is `slice(5000..5100)` and the
//!    drop of the slice (one reference taken, one dropped);
//!  - parse_frames_list: the same 100,000 [u32 len][16..64 bytes] frames
//!    (bench_frame_len, the same seed) in one Bytes; per frame
//!    `get_u32_le()`, then `split_to(len)` (a shared slice) and its drop;
//!  - parse_frames_ptr: `get_u32_le()`, read the payload's first byte,
//!    `advance(len)` (no slice).

use bytes::{Buf, Bytes};
use std::hint::black_box;
use std::time::Instant;

const CALIB_NS: u64 = 20_000_000;
const TARGET_NS: u64 = 250_000_000;
const SEG: usize = 4096;
const NSEG: usize = 1024;
const SMALL_OFF: usize = 5000;
const SMALL_LEN: usize = 100;
const FRAMES: u64 = 100_000;
const FRAME_SEED: u32 = 12345;

struct Opts {
    filters: Vec<String>,
    list: bool,
    quiet: bool,
    repeats: u32,
    iters: u64,
}

fn now_ns(t0: &Instant) -> u64 {
    t0.elapsed().as_nanos() as u64
}

fn bench_byte(i: usize) -> u8 {
    (i as u32).wrapping_mul(131).wrapping_add(7) as u8
}

// benchutil.h's bench_frame_len(): the same 16..64 sequence.
fn frame_len(state: &mut u32) -> u32 {
    *state = state.wrapping_mul(1664525).wrapping_add(1013904223);
    16 + (*state >> 16) % 49
}

impl Opts {
    fn want(&self, name: &str) -> bool {
        if self.list {
            println!("{}", name);
            return false;
        }
        if self.filters.is_empty() {
            return true;
        }
        self.filters.iter().any(|f| match f.strip_prefix('=') {
            Some(exact) => name == exact,
            None => name.contains(f.as_str()),
        })
    }

    // bench_calibrate(): warm-up and calibration, then the measured count.
    fn calibrate(&self, f: &mut dyn FnMut(u64) -> u64) -> u64 {
        if self.iters != 0 {
            f(1);
            return self.iters;
        }
        let mut n: u64 = 1;
        let wall;
        loop {
            let t0 = Instant::now();
            f(n);
            let w = now_ns(&t0);
            if w >= CALIB_NS || n >= 1 << 40 {
                wall = w;
                break;
            }
            n *= if w < CALIB_NS / 64 { 16 } else { 2 };
        }
        let per = wall as f64 / n as f64;
        let n = (TARGET_NS as f64 / per) as u64;
        n.max(1)
    }

    fn ns(&self, name: &str, f: &mut dyn FnMut(u64) -> u64) {
        let n = self.calibrate(f);
        for _ in 0..self.repeats {
            let v = f(n) as f64 / n as f64;
            println!("RESULT {} {:.3} ns", name, v);
        }
    }
}

fn parse_args() -> Opts {
    let mut o = Opts {
        filters: Vec::new(),
        list: false,
        quiet: false,
        repeats: 1,
        iters: 0,
    };
    let args: Vec<String> = std::env::args().collect();
    let mut i = 1;
    while i < args.len() {
        let a = args[i].as_str();
        if a == "-r" && i + 1 < args.len() {
            i += 1;
            o.repeats = args[i].parse::<u32>().unwrap_or(1).max(1);
        } else if a == "-C" {
            // Ceph's fixed counts: none of these workloads has one
        } else if a == "-q" {
            o.quiet = true;
        } else if a == "-l" {
            o.list = true;
            o.quiet = true;
        } else if a.starts_with('-') {
            eprintln!("usage: bench_bytes [-r REPEATS] [-C] [-q] [-l] [FILTER...]");
            std::process::exit(if a == "-h" { 0 } else { 1 });
        } else {
            o.filters.push(a.to_string());
        }
        i += 1;
    }
    if let Ok(e) = std::env::var("BL_BENCH_ITERS") {
        match e.parse::<u64>() {
            Ok(n) if n > 0 => o.iters = n,
            _ => {
                eprintln!("bench_bytes: BL_BENCH_ITERS must be a positive count");
                std::process::exit(1);
            }
        }
    }
    if !o.quiet {
        println!(
            "# bench_bytes: {} repeat(s){}",
            o.repeats,
            if o.iters != 0 { ", BL_BENCH_ITERS" } else { "" }
        );
    }
    o
}

fn substr_small(src: &Bytes, n: u64) -> u64 {
    let t0 = Instant::now();
    let mut sum = 0u64;
    for _ in 0..n {
        let s = black_box(src).slice(SMALL_OFF..SMALL_OFF + SMALL_LEN);
        sum += black_box(&s).len() as u64;
        drop(s);
    }
    let t = now_ns(&t0);
    black_box(sum);
    t
}

struct Frames {
    stream: Bytes,
    payload: u64,
}

fn frames_build() -> Frames {
    let payload: Vec<u8> = (0..64).map(bench_byte).collect();
    let mut st = FRAME_SEED;
    let mut v = Vec::new();
    let mut total = 0u64;
    for _ in 0..FRAMES {
        let len = frame_len(&mut st);
        v.extend_from_slice(&len.to_le_bytes());
        v.extend_from_slice(&payload[..len as usize]);
        total += len as u64;
    }
    let stream = Bytes::from(v);
    // shared from the start, as the list's raws are
    let _ = stream.slice(0..1);
    Frames { stream, payload: total }
}

fn parse(f: &Frames, n: u64, slices: bool) -> u64 {
    let mut buf = f.stream.clone();
    let (mut total, mut k, mut passes) = (0u64, 0u64, 0u64);
    let t0 = Instant::now();
    for _ in 0..n {
        if k == FRAMES {
            buf = f.stream.clone();
            k = 0;
            passes += 1;
        }
        let len = buf.get_u32_le() as usize;
        if slices {
            let piece = buf.split_to(len);
            total += black_box(&piece).len() as u64;
            drop(piece);
        } else {
            total += len as u64 + buf.chunk()[0] as u64;
            buf.advance(len);
        }
        k += 1;
    }
    let t = now_ns(&t0);
    if passes != 0 && total < passes * f.payload {
        eprintln!("bench: parse failed ({})", total);
        std::process::exit(2);
    }
    black_box(total);
    t
}

fn main() {
    let o = parse_args();

    if o.want("substr_100") {
        let v: Vec<u8> = (0..SEG * NSEG).map(bench_byte).collect();
        let src = Bytes::from(v);
        let holder = src.clone(); // shared, as bench_core's raws are
        o.ns("substr_100", &mut |n| substr_small(&src, n));
        drop(holder);
    }
    let list = o.want("parse_frames_list");
    let ptr = o.want("parse_frames_ptr");
    if list || ptr {
        let f = frames_build();
        if !o.quiet {
            println!("# frames: {} in {} bytes", FRAMES, f.stream.len());
        }
        if list {
            o.ns("parse_frames_list", &mut |n| parse(&f, n, true));
        }
        if ptr {
            o.ns("parse_frames_ptr", &mut |n| parse(&f, n, false));
        }
    }
}
