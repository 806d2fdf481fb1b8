//! How results and errors are shown.

/// Ends the process with this exit code and nothing more printed: the
/// command already said what happened (a container's own exit code).
#[derive(Debug)]
pub struct ExitWith(pub u8);

impl std::fmt::Display for ExitWith {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "exit code {}", self.0)
    }
}

impl std::error::Error for ExitWith {}

/// The message of an error chain, with gRPC statuses shown as their code and
/// message rather than tonic's debug form.
pub fn describe(error: &anyhow::Error) -> String {
    if let Some(status) = error.downcast_ref::<tonic::Status>() {
        return format!(
            "{} ({:?}){}",
            status.message(),
            status.code(),
            tls_hint(status.message())
        );
    }
    for cause in error.chain() {
        if let Some(status) = cause.downcast_ref::<tonic::Status>() {
            return format!("{error}: {} ({:?})", status.message(), status.code());
        }
    }
    format!("{error:#}")
}

/// What to do when the controlplane's certificate is not trusted.
fn tls_hint(message: &str) -> &'static str {
    if message.contains("invalid peer certificate") {
        ": if a private CA signed the controlplane's certificate, trust it with \
         levers9 config create NAME --tls --ca-file CA.pem or LEVERS9_CONTROLPLANE_CA=CA.pem"
    } else {
        ""
    }
}

/// Prints rows as aligned columns under a header.
pub fn table(header: &[&str], rows: &[Vec<String>]) {
    let mut widths: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let padded: Vec<String> = cells
            .iter()
            .zip(&widths)
            .map(|(cell, width)| format!("{cell:<width$}"))
            .collect();
        println!("{}", padded.join("  ").trim_end());
    };
    line(header.to_vec());
    for row in rows {
        line(row.iter().map(String::as_str).collect());
    }
}

/// An empty time shown as a dash.
pub fn or_dash(text: &str) -> String {
    if text.is_empty() {
        "-".to_owned()
    } else {
        text.to_owned()
    }
}
