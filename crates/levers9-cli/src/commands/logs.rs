//! `levers9 logs`: what tasks printed (stdout and stderr), read from the
//! controlplane's record store, so the output of spawned tasks, scheduled
//! runs and endpoint calls is there after their caller has gone.

use std::collections::HashMap;
use std::io::Write;

use anyhow::{bail, Context as _, Result};
use chrono::{DateTime, Utc};
use clap::Args;
use futures::StreamExt;
use levers9_api::v1::{ListLogsRequest, LogLine};

use crate::client::Client;

/// The stream of the controlplane's own line that says a task's output was
/// cut (see log.proto).
const MARKER_STREAM: &str = "levers9";
/// Lines per page when reading history.
const PAGE: u32 = 1000;

/// `levers9 logs` (the command's help is in commands/mod.rs and after_help).
#[derive(Debug, Args)]
#[command(
    after_help = "One task's output prints as it was written: its stdout on stdout, its\n\
    stderr on stderr. Several tasks' output (APP/FUNCTION, APP) prints each line as\n\
    `TASK_ID stdout| line` or `TASK_ID stderr| line`, stderr lines on stderr. A task\n\
    keeps its first MiB of output; lines are kept 7 days (docs/logs.md).\n\n\
    Examples:\n  \
    levers9 logs t-01a24431b35774dca92fb26acf7f61ba   one task\n  \
    levers9 logs my-app/resize --since 10m          one function of a deployed app\n  \
    levers9 logs my-app -f                          every function of an app, following"
)]
pub struct LogsArgs {
    /// A task id (see levers9 task list), APP/FUNCTION (a function of a
    /// deployed app) or APP (every function of the app's current deploy).
    target: String,
    /// Keep printing new lines as they come, until Ctrl-C; for one task,
    /// until the task has finished.
    #[arg(short, long)]
    follow: bool,
    /// Only lines from this long ago on (30s, 10m, 2h, 1d) or since an
    /// RFC 3339 time (2025-03-14T15:09:26Z).
    #[arg(long, value_name = "AGE|TIME")]
    since: Option<String>,
    /// Only the last N lines (chunks as the task printed them) stored so far.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=10_000))]
    tail: Option<u32>,
}

/// What the target names.
#[derive(Debug, PartialEq, Eq)]
enum Target {
    Task(String),
    Function { app: String, function: String },
    App(String),
}

impl Target {
    /// APP/FUNCTION, or a single name: a task id or an app, which only the
    /// controlplane can tell apart (see [`Target::resolve`]).
    fn parse(text: &str) -> Result<std::result::Result<Target, String>> {
        let text = text.trim();
        if text.is_empty() {
            bail!("name a task id, APP/FUNCTION or APP");
        }
        match text.split_once('/') {
            Some((app, function)) if !app.is_empty() && !function.is_empty() => {
                Ok(Ok(Target::Function {
                    app: app.to_owned(),
                    function: function.to_owned(),
                }))
            }
            Some(_) => bail!("{text:?}: write APP/FUNCTION, both parts named"),
            None => Ok(Err(text.to_owned())),
        }
    }

    /// A single name is a task of this workspace if there is one, else an app.
    async fn resolve(client: &Client, name: String) -> Result<Target> {
        let probe = ListLogsRequest {
            task_id: name.clone(),
            limit: 1,
            ..Default::default()
        };
        match client.logs().list_logs(probe).await {
            Ok(_) => return Ok(Target::Task(name)),
            Err(status) if status.code() == tonic::Code::NotFound => {}
            Err(status) => return Err(status.into()),
        }
        let probe = ListLogsRequest {
            app_name: name.clone(),
            limit: 1,
            ..Default::default()
        };
        match client.logs().list_logs(probe).await {
            Ok(_) => Ok(Target::App(name)),
            Err(status) if status.code() == tonic::Code::NotFound => bail!(
                "no task or deployed app {name:?} in this workspace: see levers9 task list \
                 and levers9 deployment list"
            ),
            Err(status) => Err(status.into()),
        }
    }

    fn request(&self) -> ListLogsRequest {
        match self {
            Target::Task(id) => ListLogsRequest {
                task_id: id.clone(),
                ..Default::default()
            },
            Target::Function { app, function } => ListLogsRequest {
                app_name: app.clone(),
                function_name: function.clone(),
                ..Default::default()
            },
            Target::App(app) => ListLogsRequest {
                app_name: app.clone(),
                ..Default::default()
            },
        }
    }
}

/// `10m` ago, or an RFC 3339 time, as RFC 3339.
fn since(text: &str, now: DateTime<Utc>) -> Result<String> {
    if let Ok(at) = DateTime::parse_from_rfc3339(text) {
        return Ok(at.with_timezone(&Utc).to_rfc3339());
    }
    let unit_at = text.len().saturating_sub(1);
    let (amount, unit) = text.split_at(unit_at);
    let seconds = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => 0,
    };
    let amount: i64 = match amount.parse() {
        Ok(n) if seconds > 0 && n >= 0 => n,
        _ => bail!(
            "--since {text:?}: write an age like 30s, 10m, 2h or 1d, or an RFC 3339 time \
             like 2025-03-14T15:09:26Z"
        ),
    };
    let age = chrono::Duration::try_seconds(amount.saturating_mul(seconds))
        .with_context(|| format!("--since {text:?} is too far back"))?;
    Ok((now - age).to_rfc3339())
}

/// Prints lines: one task's as written, several tasks' prefixed per line.
#[derive(Default)]
struct Printer {
    prefixed: bool,
    /// Per (task, stream), the end of its last chunk that was not a whole
    /// line yet (`print()` writes its text and its newline apart), so a
    /// prefix starts every line and only lines.
    partial: HashMap<(String, String), Vec<u8>>,
}

impl Printer {
    fn print(&mut self, lines: &[LogLine]) -> Result<()> {
        let mut stdout = std::io::stdout().lock();
        let mut stderr = std::io::stderr().lock();
        for line in lines {
            let out: &mut dyn Write = if line.stream == "stdout" {
                &mut stdout
            } else {
                &mut stderr
            };
            if line.stream == MARKER_STREAM {
                let text = String::from_utf8_lossy(&line.data);
                writeln!(out, "{} {}", line.task_id, text.trim_end())?;
            } else if self.prefixed {
                let key = (line.task_id.clone(), line.stream.clone());
                let mut pending = self.partial.remove(&key).unwrap_or_default();
                pending.extend_from_slice(&line.data);
                let whole = pending
                    .iter()
                    .rposition(|b| *b == b'\n')
                    .map_or(0, |i| i + 1);
                for text in pending[..whole].split_inclusive(|b| *b == b'\n') {
                    write!(out, "{} {}| ", line.task_id, line.stream)?;
                    out.write_all(text)?;
                }
                if whole < pending.len() {
                    self.partial.insert(key, pending[whole..].to_vec());
                }
            } else {
                out.write_all(&line.data)?;
            }
        }
        stdout.flush()?;
        stderr.flush()?;
        Ok(())
    }

    /// Prints what is left of unfinished lines, each ended by a newline.
    fn finish(&mut self) -> Result<()> {
        let mut partial: Vec<_> = self.partial.drain().collect();
        partial.sort();
        for ((task_id, stream), text) in partial {
            let mut text = text;
            text.push(b'\n');
            self.print(&[LogLine {
                task_id,
                stream,
                data: text,
                ..Default::default()
            }])?;
        }
        Ok(())
    }
}

/// Runs `levers9 logs`.
pub async fn run(args: LogsArgs, context: Option<&str>) -> Result<()> {
    let parsed = Target::parse(&args.target)?;
    let client = super::connect(context).await?;
    let target = match parsed {
        Ok(target) => target,
        Err(name) => Target::resolve(&client, name).await?,
    };
    let mut request = target.request();
    if let Some(text) = &args.since {
        request.since = since(text, Utc::now())?;
    }
    request.limit = args.tail.unwrap_or(PAGE);
    request.tail = args.tail.is_some();
    let mut printer = Printer {
        prefixed: !matches!(target, Target::Task(_)),
        ..Default::default()
    };
    if args.follow {
        follow(&client, request, &mut printer).await?;
    } else {
        history(&client, request, &mut printer).await?;
    }
    printer.finish()
}

/// Prints what is stored, a page at a time.
async fn history(
    client: &Client,
    mut request: ListLogsRequest,
    printer: &mut Printer,
) -> Result<()> {
    loop {
        let lines = client
            .logs()
            .list_logs(request.clone())
            .await?
            .into_inner()
            .lines;
        printer.print(&lines)?;
        // A tail is one answer; otherwise read on until a short page.
        if request.tail || lines.len() < request.limit as usize {
            return Ok(());
        }
        request.after_id = lines.last().map_or(request.after_id, |l| l.id);
    }
}

/// Prints what is stored, then new lines until the stream ends (one task
/// finished) or Ctrl-C.
async fn follow(client: &Client, request: ListLogsRequest, printer: &mut Printer) -> Result<()> {
    let mut stream = client.logs().follow_logs(request).await?.into_inner();
    while let Some(answer) = stream.next().await {
        printer.print(&answer?.lines)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_target_is_a_function_or_a_name_to_resolve() {
        assert_eq!(
            Target::parse("app/resize").unwrap(),
            Ok(Target::Function {
                app: "app".into(),
                function: "resize".into()
            })
        );
        assert_eq!(
            Target::parse("t-0193a5c2").unwrap(),
            Err("t-0193a5c2".into())
        );
        let err = Target::parse("app/").unwrap_err().to_string();
        assert!(err.contains("APP/FUNCTION"), "{err}");
    }

    #[test]
    fn since_takes_an_age_or_a_time() {
        let now = DateTime::parse_from_rfc3339("2025-03-14T15:09:26Z")
            .unwrap()
            .with_timezone(&Utc);
        assert_eq!(since("10m", now).unwrap(), "2025-03-14T14:59:26+00:00");
        assert_eq!(since("1d", now).unwrap(), "2025-03-13T15:09:26+00:00");
        assert_eq!(
            since("2025-03-14T15:00:00Z", now).unwrap(),
            "2025-03-14T15:00:00+00:00"
        );
        let err = since("ten minutes", now).unwrap_err().to_string();
        assert!(err.contains("30s, 10m"), "{err}");
    }
}
