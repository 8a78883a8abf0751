//! `gpuslicectl top`: per-claim GPU use, live. On a terminal it takes the
//! alternate screen, hides the cursor and redraws in place every interval
//! (keys: q, Esc or Ctrl-C quit; m, s, i, n sort by memory, SM, idle time,
//! name); the terminal is given back as it was on every way out: quit, a
//! signal, an error, a panic (the [`Screen`] guard). When gpusliced does not
//! answer (a restart), the live view keeps the last sample on screen, says
//! why under the title and tries again at each interval; a key line under
//! the header lists the keys. The live view shows gpusliced's periodic
//! samples. Piped, or with `--once`, it prints the screen once, without the
//! key line; `--output json` prints the reply; both ask gpusliced for a
//! sample taken now (GetActivity `fresh`), so what was just prepared or
//! started is in it. What is drawn comes from [`crate::top_render::lines`].

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

use anyhow::Context;
use crossterm::event::{Event, EventStream, KeyCode, KeyEvent, KeyModifiers};
use crossterm::{cursor, execute, queue, style, terminal};
use gpuslice_proto::gpuslice::v1 as pb;
use gpuslice_proto::gpuslice::v1::gpu_slice_client::GpuSliceClient;
use tokio::signal::unix::{SignalKind, signal};
use tokio_stream::StreamExt;
use tonic::transport::Channel;

use crate::activity_render::activity_json;
use crate::top_render::{Node, SortKey, lines, with_keys, with_problem};
use crate::units::parse_duration;

/// `top`'s options.
#[derive(Debug, clap::Args)]
pub struct TopArgs {
    /// Row order.
    #[arg(long, value_enum, default_value_t = SortKey::Memory)]
    sort: SortKey,
    /// How often to redraw, e.g. 2s (default: gpusliced's sampling interval).
    #[arg(long, value_parser = parse_duration)]
    interval: Option<u64>,
    /// Print once and exit, even on a terminal (from a sample gpusliced
    /// takes now, as when piped).
    #[arg(long)]
    once: bool,
}

/// Redraw interval when sampling is off (the screen only says so).
const OFF_INTERVAL: Duration = Duration::from_secs(5);

/// GetActivity: a sample taken now (`fresh`), or gpusliced's latest.
async fn fetch(
    client: &mut GpuSliceClient<Channel>,
    fresh: bool,
) -> anyhow::Result<pb::GetActivityResponse> {
    Ok(client
        .get_activity(pb::GetActivityRequest { fresh })
        .await?
        .into_inner())
}

/// This host's name ("" when unreadable).
fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_owned())
        .unwrap_or_default()
}

/// Runs `top`; returns what to print (nothing after a live view).
pub async fn run(
    client: &mut GpuSliceClient<Channel>,
    args: TopArgs,
    json: bool,
) -> anyhow::Result<String> {
    let once = args.once || json || !std::io::stdout().is_terminal();
    let reply = fetch(client, once).await?;
    if json {
        return Ok(activity_json(&reply));
    }
    let status = client
        .get_status(pb::GetStatusRequest {})
        .await?
        .into_inner();
    let node = Node {
        name: host_name(),
        gpus: status.gpu_count,
    };
    if once {
        let mut text = lines(&reply, &node, args.sort, reply.now, 0).join("\n");
        text.push('\n');
        return Ok(text);
    }
    let every = match (args.interval, reply.interval_ms) {
        (Some(0), _) => anyhow::bail!("--interval must be at least 1s"),
        (Some(s), _) => Duration::from_secs(s),
        (None, 0) => OFF_INTERVAL,
        (None, ms) => Duration::from_millis(ms),
    };
    live(client, &node, args.sort, every, reply).await?;
    Ok(String::new())
}

/// The terminal in top's mode; put back when dropped.
struct Screen;

impl Screen {
    fn enter() -> anyhow::Result<Self> {
        terminal::enable_raw_mode().context("cannot put the terminal in raw mode")?;
        let screen = Self;
        execute!(
            std::io::stdout(),
            terminal::EnterAlternateScreen,
            cursor::Hide
        )
        .context("cannot take the alternate screen")?;
        Ok(screen)
    }
}

impl Drop for Screen {
    fn drop(&mut self) {
        let _ = execute!(
            std::io::stdout(),
            cursor::Show,
            terminal::LeaveAlternateScreen
        );
        let _ = terminal::disable_raw_mode();
    }
}

/// The last sample that came, when, and why the fetch after it failed.
struct Shown {
    reply: pb::GetActivityResponse,
    fetched: Instant,
    problem: Option<String>,
    every: Duration,
}

impl Shown {
    /// The screen's lines, `width` characters at most (0: uncut). The
    /// sample's age counts on from gpusliced's clock at the fetch.
    fn lines(&self, node: &Node, sort: SortKey, width: usize) -> Vec<String> {
        let waited = i64::try_from(self.fetched.elapsed().as_secs()).unwrap_or(i64::MAX);
        let now = self.reply.now.saturating_add(waited);
        let shown = with_keys(lines(&self.reply, node, sort, now, 0), sort, width);
        match &self.problem {
            None => shown,
            Some(problem) => {
                let every = i64::try_from(self.every.as_secs()).unwrap_or(i64::MAX);
                with_problem(shown, problem, every, width)
            }
        }
    }
}

fn draw(shown: &Shown, node: &Node, sort: SortKey) -> anyhow::Result<()> {
    let (width, height) = terminal::size().unwrap_or((80, 24));
    let mut out = std::io::stdout().lock();
    let shown = shown.lines(node, sort, usize::from(width));
    queue!(out, cursor::MoveTo(0, 0))?;
    for (row, line) in shown.iter().take(usize::from(height)).enumerate() {
        let row = u16::try_from(row).unwrap_or(u16::MAX);
        queue!(
            out,
            cursor::MoveTo(0, row),
            style::Print(line),
            terminal::Clear(terminal::ClearType::UntilNewLine)
        )?;
    }
    let below = u16::try_from(shown.len()).unwrap_or(u16::MAX);
    if below < height {
        queue!(
            out,
            cursor::MoveTo(0, below),
            terminal::Clear(terminal::ClearType::FromCursorDown)
        )?;
    }
    out.flush().context("cannot write to the terminal")
}

/// What a key asks for.
enum Key {
    Quit,
    Sort(SortKey),
    Nothing,
}

fn key(event: &KeyEvent) -> Key {
    let ctrl = event.modifiers.contains(KeyModifiers::CONTROL);
    match event.code {
        KeyCode::Char('c') if ctrl => Key::Quit,
        KeyCode::Char('q') | KeyCode::Esc => Key::Quit,
        KeyCode::Char('m') => Key::Sort(SortKey::Memory),
        KeyCode::Char('s') => Key::Sort(SortKey::Sm),
        KeyCode::Char('i') => Key::Sort(SortKey::Idle),
        KeyCode::Char('n') => Key::Sort(SortKey::Name),
        _ => Key::Nothing,
    }
}

async fn live(
    client: &mut GpuSliceClient<Channel>,
    node: &Node,
    mut sort: SortKey,
    every: Duration,
    reply: pb::GetActivityResponse,
) -> anyhow::Result<()> {
    let mut sigterm = signal(SignalKind::terminate())?;
    let mut sigint = signal(SignalKind::interrupt())?;
    let mut sighup = signal(SignalKind::hangup())?;
    let _screen = Screen::enter()?;
    let mut events = EventStream::new();
    let mut shown = Shown {
        reply,
        fetched: Instant::now(),
        problem: None,
        every,
    };
    loop {
        draw(&shown, node, sort)?;
        let tick = tokio::time::sleep(every);
        tokio::pin!(tick);
        loop {
            tokio::select! {
                () = &mut tick => break,
                event = events.next() => match event {
                    Some(Ok(Event::Key(k))) => match key(&k) {
                        Key::Quit => return Ok(()),
                        Key::Sort(s) => { sort = s; draw(&shown, node, sort)?; }
                        Key::Nothing => {}
                    },
                    Some(Ok(Event::Resize(..))) => draw(&shown, node, sort)?,
                    Some(Ok(_)) => {}
                    Some(Err(err)) => return Err(err).context("cannot read the terminal"),
                    None => return Ok(()),
                },
                _ = sigterm.recv() => return Ok(()),
                _ = sigint.recv() => return Ok(()),
                _ = sighup.recv() => return Ok(()),
            }
        }
        match fetch(client, false).await {
            Ok(reply) => {
                shown.reply = reply;
                shown.fetched = Instant::now();
                shown.problem = None;
            }
            Err(err) => {
                shown.problem = Some(match err.downcast_ref::<tonic::Status>() {
                    Some(status) => format!("{:?}: {}", status.code(), status.message()),
                    None => format!("{err:#}"),
                });
            }
        }
    }
}
