//! Compiles `proto/levers9/v1/*.proto` with protox (pure Rust), so building
//! levers9 needs no `protoc` on the machine.

use std::path::PathBuf;

/// Messages with a field that must never be printed.
const SECRET_BEARING: [&str; 10] = [
    ".levers9.v1.AuthorizeResponse",
    ".levers9.v1.CreateTokenResponse",
    ".levers9.v1.CreateWorkspaceResponse",
    ".levers9.v1.CreateSecretRequest",
    ".levers9.v1.UpdateSecretRequest",
    ".levers9.v1.StorageCredentials",
    ".levers9.v1.RunContainer",
    ".levers9.v1.CreateMachineResponse",
    ".levers9.v1.JoinMachineResponse",
    ".levers9.v1.Registered",
];

/// Enum fields and their enums: prost keeps them as `i32`, which serde would
/// write as a number; the REST JSON writes each as its lower-case word
/// instead (src/words.rs), the text these fields carried before they were
/// enums.
const ENUM_FIELDS: [(&str, &str); 8] = [
    (".levers9.v1.TaskOutcome.state", "FinalTaskState"),
    (".levers9.v1.Task.state", "TaskState"),
    (".levers9.v1.TaskAttempt.outcome", "AttemptOutcome"),
    (".levers9.v1.TaskResult.state", "TaskResultState"),
    (".levers9.v1.ContainerEvent.state", "ContainerEventState"),
    (".levers9.v1.Worker.status", "WorkerStatus"),
    (".levers9.v1.Container.state", "ContainerState"),
    (".levers9.v1.Machine.state", "MachineState"),
];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let proto_root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../proto");
    let service_dir = proto_root.join("levers9/v1");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&service_dir)?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "proto"))
        .collect();
    files.sort();
    println!("cargo:rerun-if-changed={}", service_dir.display());
    for file in &files {
        println!("cargo:rerun-if-changed={}", file.display());
    }

    let descriptors = protox::compile(&files, [&proto_root])?;
    let mut config = tonic_prost_build::configure();
    for (field, enumeration) in ENUM_FIELDS {
        config = config.field_attribute(
            field,
            format!(
                "#[serde(serialize_with = \"crate::words::serialize::<crate::v1::{enumeration}, _>\", \
                 deserialize_with = \"crate::words::deserialize::<crate::v1::{enumeration}, _>\")]"
            ),
        );
    }
    config
        // The REST mapping reads and writes these messages as JSON the way
        // grpc-gateway does: lowerCamelCase names, absent fields are defaults.
        .message_attribute(
            ".levers9.v1",
            "#[derive(serde::Serialize, serde::Deserialize)] #[serde(rename_all = \"camelCase\", default)]",
        )
        .enum_attribute(
            ".levers9.v1",
            "#[derive(serde::Serialize, serde::Deserialize)] #[serde(rename_all = \"camelCase\")]",
        )
        // Messages that carry a secret value get a hand-written Debug that
        // hides it (src/redact.rs), so no log line can print one.
        .skip_debug(SECRET_BEARING)
        .compile_fds(descriptors)?;
    Ok(())
}
