//! Through the owner (issue 17 §6): a release `bcs --home H serve` as a child process
//! and clients on its Unix socket speaking JSON-RPC lines. The clients are plain
//! blocking sockets on threads, so what is timed is the owner and the socket, not a
//! client library (each waits for its answer with `poll(POLLIN)`, as an event loop
//! does, and sends params serialized once): `owner/append-durable` and `owner/append-buffered` (µs per round
//! trip, one client, one request in flight; the durable one interleaved with
//! `owner/append-durable-base`, the in-process durable append), `owner/rate-1c`, `owner/rate-32c` (32
//! clients on one session) and `owner/rate-64s` (64 sessions, a client each) in durable
//! appends per second (and `owner/cpu-*`: the owner's CPU time per acknowledged append
//! in those runs), `owner/context-100k` (a `session/buildSessionContext` round trip
//! of the 100k session) beside `owner/context-100k-base` (the in-process rebuild plus
//! pushing the answer's bytes through a socket pair), and `owner/rss-1000` (the
//! owner's peak RSS holding 1,000 sessions of the 1k file open). `BCS_BENCH_OWNER_BCS=PATH`
//! runs these rows against another build's `bcs` instead of this tree's, and
//! `BCS_BENCH_OWNER_SERVE_ARGS="--separate-syncs"` with other `serve` options.

use std::fs;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use rustix::event::{PollFd, PollFlags};
use serde_json::{Value, json};
use session_manager::{Layout, Store};

use super::{Bench, build_bcs};
use crate::bench::report::median;

/// Durable appends per client in the rate runs.
const RATE_APPENDS: usize = 100;
/// Sessions held open for the memory figure.
const RSS_SESSIONS: usize = 1000;

pub(super) fn owner(b: &mut Bench<'_>) -> Result<()> {
    // Another build's `bcs` (an A/B of two owners under the same load) when named.
    let bcs = match std::env::var_os("BCS_BENCH_OWNER_BCS") {
        Some(path) => PathBuf::from(path),
        None => build_bcs(b.root)?,
    };
    let home = b.tmp("owner-home");
    let _ = fs::remove_dir_all(&home);
    fs::create_dir_all(&home)?;
    let server = Server::start(&bcs, &home)?;
    let typed = b.msgs(1).remove(0);
    let message = serde_json::to_value(&typed)?;

    // Round trips, one client, one request in flight. The durable one is interleaved
    // with its baseline, the in-process durable append of the same message to a
    // session in a store beside the owner's (same file system), so both see the
    // same load.
    let mut c = server.connect()?;
    let sid = c.create("/bench/owner")?;
    let base_home = b.tmp("owner-base-home");
    let _ = fs::remove_dir_all(&base_home);
    let base_store = Store::new(Layout::with_root(&base_home)?);
    let mut inproc = base_store.create("/bench/owner-base")?;
    let (mut durable, mut base) = (Vec::new(), Vec::new());
    let durable_append = Append::new(&sid, &message, "durable")?;
    for i in 0..=super::N_DURABLE {
        let mut through = || -> Result<f64> {
            let t = Instant::now();
            c.append(&durable_append)?;
            Ok(t.elapsed().as_secs_f64() * 1e6)
        };
        let mut local = || -> Result<f64> {
            let m = typed.clone();
            let t = Instant::now();
            inproc.append_message(m)?;
            Ok(t.elapsed().as_secs_f64() * 1e6)
        };
        let (o, l) = if i % 2 == 0 {
            let o = through()?;
            (o, local()?)
        } else {
            let l = local()?;
            (through()?, l)
        };
        if i > 0 {
            durable.push(o);
            base.push(l);
        }
    }
    inproc.close()?;
    let _ = fs::remove_dir_all(&base_home);
    b.samples.put("owner/append-durable", durable);
    b.samples.put("owner/append-durable-base", base);
    let mut buffered = Vec::new();
    let buffered_append = Append::new(&sid, &message, "buffered")?;
    for i in 0..=super::N_FAST {
        let t = Instant::now();
        c.append(&buffered_append)?;
        if i > 0 {
            buffered.push(t.elapsed().as_secs_f64() * 1e6);
        }
    }
    b.samples.put("owner/append-buffered", buffered);
    eprintln!(
        "ours: owner round trip durable {:.0} µs (in process, interleaved: {:.0} µs), buffered {:.1} µs",
        b.median("owner/append-durable"),
        b.median("owner/append-durable-base"),
        b.median("owner/append-buffered")
    );

    // Durable appends per second: one client, 32 clients on one session, 64 sessions;
    // the three interleaved rep by rep, so each ratio to one client compares runs
    // under the same load (the disk's sync time varies with what else runs).
    let reps = b.opts.reps.clamp(1, 5);
    let runs = [
        ("owner/rate-1c", 1, true),
        ("owner/rate-32c", 32, true),
        ("owner/rate-64s", 64, false),
    ];
    let mut rates = vec![Vec::new(); runs.len()];
    // The owner's CPU time (user + system, all its threads) per acknowledged append,
    // summed over the reps (its clock ticks are 10 ms: a rep alone is too short).
    let mut cpu = vec![(0.0, 0); runs.len()];
    for _ in 0..reps {
        for (((_, clients, shared), rates), cpu) in runs.iter().zip(&mut rates).zip(&mut cpu) {
            // Whatever the owner still does for the previous run (closing its
            // sessions) is no part of this one.
            let before = settled_cpu_ms(server.child.id());
            rates.push(rate(&server, &message, *clients, shared.then_some(&sid))?);
            cpu.0 += process_cpu_ms(server.child.id()) - before;
            cpu.1 += clients * RATE_APPENDS;
        }
    }
    for (((key, _, _), rates), (ms, appends)) in runs.iter().zip(rates).zip(cpu) {
        b.samples.put(*key, rates);
        let cpu_key = key.replace("rate", "cpu");
        b.samples.put(&cpu_key, vec![ms * 1e3 / appends as f64]);
        eprintln!(
            "ours: {key} {:.0} durable appends/s, owner CPU {:.1} µs per append",
            b.median(key),
            b.median(&cpu_key)
        );
    }
    drop(c);

    context_100k(b, &server)?;
    let rss = rss_1000(b, &bcs)?;
    b.samples.put("owner/rss-1000", vec![rss]);
    eprintln!("ours: owner RSS holding {RSS_SESSIONS} sessions of 1k: {rss:.1} MiB");
    drop(server);
    let _ = fs::remove_dir_all(&home);
    Ok(())
}

/// The CPU time (user + system, ms) process `pid` has used so far, from
/// `/proc/PID/stat` (clock ticks of 10 ms).
fn process_cpu_ms(pid: u32) -> f64 {
    // utime and stime: fields 14 and 15 of the line (1-based).
    super::stat_ms(&format!("/proc/{pid}/stat"), 14, 15)
}

/// [`process_cpu_ms`] once it stops growing (two readings 50 ms apart agree; at most
/// 3 s): the process is idle.
fn settled_cpu_ms(pid: u32) -> f64 {
    let mut last = process_cpu_ms(pid);
    for _ in 0..60 {
        std::thread::sleep(Duration::from_millis(50));
        let now = process_cpu_ms(pid);
        if now == last {
            break;
        }
        last = now;
    }
    last
}

/// Durable appends per second of `clients` connections, each appending
/// [`RATE_APPENDS`] times with one request in flight, to `shared` or each to a
/// session of its own.
fn rate(server: &Server, message: &Value, clients: usize, shared: Option<&String>) -> Result<f64> {
    let mut conns = Vec::new();
    for i in 0..clients {
        let mut c = server.connect()?;
        let sid = match shared {
            Some(sid) => {
                c.call("store/open", json!({ "sessionId": sid }))?;
                sid.clone()
            }
            None => c.create(&format!("/bench/owner/{i}"))?,
        };
        conns.push((c, sid));
    }
    let start = std::sync::Barrier::new(clients + 1);
    let t = std::thread::scope(|s| -> Result<Duration> {
        let handles: Vec<_> = conns
            .iter_mut()
            .map(|(c, sid)| {
                let start = &start;
                s.spawn(move || -> Result<()> {
                    let append = Append::new(sid, message, "durable")?;
                    start.wait();
                    for _ in 0..RATE_APPENDS {
                        c.append(&append)?;
                    }
                    Ok(())
                })
            })
            .collect();
        start.wait();
        let t = Instant::now();
        for h in handles {
            h.join()
                .map_err(|_| anyhow::anyhow!("a client thread panicked"))??;
        }
        Ok(t.elapsed())
    })?;
    Ok((clients * RATE_APPENDS) as f64 / t.as_secs_f64())
}

/// The 100k session's context through the owner, and its baseline: the in-process
/// rebuild plus the answer's bytes pushed through a socket pair.
fn context_100k(b: &mut Bench<'_>, server: &Server) -> Result<()> {
    let journal = b
        .native
        .journals
        .iter()
        .find(|(s, _)| s == "100k")
        .map(|(_, j)| j.clone())
        .context("the 100k journal")?;
    let reps = b.opts.reps;
    // In process first: the owner will hold the session's lock.
    let store = b.store();
    let s = store.open(&journal)?;
    let inproc = super::timed(reps, || Ok(()), |()| Ok(s.build_session_context()?))?;
    drop(s);

    let mut c = server.connect()?;
    let opened = c.call("store/open", json!({ "path": journal }))?;
    let sid = opened["sessionId"]
        .as_str()
        .context("store/open answers a sessionId")?
        .to_owned();
    let mut bytes = 0;
    let through = super::timed(
        reps,
        || Ok(()),
        |()| {
            bytes = c
                .call_raw("session/buildSessionContext", json!({ "sessionId": sid }))?
                .len();
            Ok(())
        },
    )?;
    c.call("session/close", json!({ "sessionId": sid }))?;
    let transfer = super::timed(reps, || Ok(()), |()| push_through_socket(bytes))?;
    let base: Vec<f64> = inproc.iter().zip(&transfer).map(|(a, t)| a + t).collect();
    eprintln!(
        "ours: owner context/100k {:.2} ms ({:.1} MB); in-process {:.2} ms + transfer {:.2} ms",
        median(&through).unwrap_or(0.0),
        bytes as f64 / 1e6,
        median(&inproc).unwrap_or(0.0),
        median(&transfer).unwrap_or(0.0)
    );
    b.samples.put("owner/context-100k", through);
    b.samples.put("owner/context-100k-base", base);
    Ok(())
}

/// `n` bytes written by one thread into a Unix socket pair and read by another.
fn push_through_socket(n: usize) -> Result<usize> {
    let (mut a, mut z) = UnixStream::pair()?;
    let data = vec![b'x'; n];
    std::thread::scope(|s| {
        let w = s.spawn(move || a.write_all(&data));
        let mut got = Vec::with_capacity(n);
        let r = z.read_to_end(&mut got);
        w.join()
            .map_err(|_| anyhow::anyhow!("writer panicked"))?
            .context("writing")?;
        r.context("reading")?;
        Ok(got.len())
    })
}

/// The peak RSS (MiB) of a fresh owner holding [`RSS_SESSIONS`] forks of the 1k
/// session open on one connection.
fn rss_1000(b: &Bench<'_>, bcs: &Path) -> Result<f64> {
    let journal = b
        .native
        .journals
        .iter()
        .find(|(s, _)| s == "1k")
        .map(|(_, j)| j.clone())
        .context("the 1k journal")?;
    let home = b.tmp("owner-rss-home");
    let _ = fs::remove_dir_all(&home);
    fs::create_dir_all(&home)?;
    let server = Server::start(bcs, &home)?;
    let mut c = server.connect()?;
    for i in 0..RSS_SESSIONS {
        c.call(
            "store/forkFrom",
            json!({ "source": journal, "targetCwd": format!("/bench/rss/{i}") }),
        )?;
    }
    let status = fs::read_to_string(format!("/proc/{}/status", server.child.id()))?;
    let hwm = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .context("VmHWM of the owner")?;
    drop(c);
    drop(server);
    let _ = fs::remove_dir_all(&home);
    Ok(hwm / 1024.0)
}

/// A `bcs serve` child; killed when dropped.
struct Server {
    child: Child,
    socket: PathBuf,
}

impl Server {
    fn start(bcs: &Path, home: &Path) -> Result<Self> {
        // Extra `serve` options for an A/B of one build (`--separate-syncs`).
        let extra = std::env::var("BCS_BENCH_OWNER_SERVE_ARGS").unwrap_or_default();
        let child = Command::new(bcs)
            .arg("--home")
            .arg(home)
            .arg("serve")
            .args(extra.split_whitespace())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .context("starting bcs serve")?;
        let server = Self {
            child,
            socket: home.join("owner/owner.sock"),
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        while UnixStream::connect(&server.socket).is_err() {
            if Instant::now() > deadline {
                bail!("bcs serve did not answer on {}", server.socket.display());
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        Ok(server)
    }

    fn connect(&self) -> Result<Conn> {
        let w = UnixStream::connect(&self.socket)
            .with_context(|| format!("connecting to {}", self.socket.display()))?;
        let mut c = Conn {
            // Large reads, as the context row's baseline reads its bytes.
            r: BufReader::with_capacity(256 << 10, w.try_clone()?),
            w,
            next: 0,
            line: Vec::new(),
        };
        c.call(
            "initialize",
            json!({ "protocolVersion": { "major": 1, "minor": 0 } }),
        )?;
        Ok(c)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One connection, one request in flight.
struct Conn {
    r: BufReader<UnixStream>,
    w: UnixStream,
    next: u64,
    line: Vec<u8>,
}

impl Conn {
    /// The answer's line, unparsed (an error answer is an error).
    fn call_raw(&mut self, method: &str, params: Value) -> Result<&[u8]> {
        self.call_text(method, &serde_json::to_string(&params)?)
    }

    /// [`call_raw`](Self::call_raw) with the params as JSON text.
    fn call_text(&mut self, method: &str, params: &str) -> Result<&[u8]> {
        self.next += 1;
        let mut req = Vec::with_capacity(params.len() + 96);
        write!(
            req,
            r#"{{"jsonrpc":"2.0","id":{},"method":{},"params":{params}}}"#,
            self.next,
            serde_json::to_string(method)?
        )?;
        req.push(b'\n');
        self.w.write_all(&req)?;
        if self.r.buffer().is_empty() {
            // Wait for the answer's bytes only: a thread blocked in `read` on a Unix
            // socket is also woken each time the owner consumes its request (the
            // socket's write space), an extra wake-up and context switch per call
            // on the owner's CPU time; `poll(POLLIN)` is woken by data alone, as an
            // event loop waiting for readability is.
            let fd = self.w.as_fd();
            let mut ready = [PollFd::new(&fd, PollFlags::IN)];
            loop {
                match rustix::event::poll(&mut ready, None) {
                    Err(rustix::io::Errno::INTR) => continue,
                    r => break r.map(drop)?,
                }
            }
        }
        self.line.clear();
        if self.r.read_until(b'\n', &mut self.line)? == 0 {
            bail!("{method}: the owner closed the connection");
        }
        // The answer's first member after the id says which it is: only the line's
        // head is looked at (the owner writes `jsonrpc`, then `id`, then it).
        let head = String::from_utf8_lossy(&self.line[..self.line.len().min(96)]);
        let (result, error) = (head.find("\"result\":"), head.find("\"error\":"));
        if result.is_none() || error.is_some_and(|e| result.is_none_or(|r| e < r)) {
            bail!(
                "{method}: {}",
                String::from_utf8_lossy(&self.line).trim_end()
            );
        }
        Ok(&self.line)
    }

    fn call(&mut self, method: &str, params: Value) -> Result<Value> {
        let line = self.call_raw(method, params)?;
        let mut v: Value = serde_json::from_slice(line)?;
        Ok(v["result"].take())
    }

    fn create(&mut self, cwd: &str) -> Result<String> {
        let r = self.call("store/create", json!({ "cwd": cwd }))?;
        Ok(r["sessionId"]
            .as_str()
            .context("store/create answers a sessionId")?
            .to_owned())
    }

    fn append(&mut self, append: &Append) -> Result<()> {
        self.call_text("session/appendMessage", &append.params)?;
        Ok(())
    }
}

/// An `appendMessage`'s params, serialized once: the client's encoding of its message
/// is not the owner's work (the in-process baseline's message is built outside its
/// timer too).
struct Append {
    params: String,
}

impl Append {
    fn new(sid: &str, message: &Value, durability: &str) -> Result<Self> {
        let params = json!({ "sessionId": sid, "message": message, "durability": durability });
        Ok(Self {
            params: serde_json::to_string(&params)?,
        })
    }
}
