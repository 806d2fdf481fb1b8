//! The mapping table: every variant of every domain error, the status code
//! it reaches through [`ApiError`], and the message the caller reads. Each
//! domain has an exhaustive `variant` match, so a new variant does not
//! compile here until it has a row.

use std::collections::BTreeSet;
use std::fmt::Debug;

use levers9_state::StateError;
use levers9_store::StoreError;
use levers9_volumes::VolumeError;
use tonic::{Code, Status};

use crate::fleet::FleetError;
use crate::functions::objects::ObjectStorageError;
use crate::functions::FunctionError;
use crate::images::ImageServiceError;
use crate::machines::MachineError;

/// A detail that stands for a host, a query or a key: never on the wire.
const SECRET: &str = "db.internal:5432 password=hunter2";

const DATABASE: &str = "the controlplane could not reach its database; try again shortly";
const HOT_STATE: &str = "the controlplane could not reach its hot state; try again shortly";
const DATA: &str = "the controlplane could not store or read data; try again shortly";
const CORRUPT: &str = "a stored record is unreadable; the controlplane log has details";

fn store_error() -> StoreError {
    StoreError::Invalid(SECRET.into())
}

fn state_error() -> StateError {
    StateError::Unexpected(SECRET.into())
}

fn json_error() -> serde_json::Error {
    serde_json::from_str::<u8>(SECRET).expect_err("not a number")
}

/// One row: an error, the code and the message it reaches.
type Row<E> = (E, Code, &'static str);

/// Checks each row, and that the rows hold every variant (`variant`
/// numbers them `0..count`).
fn check<E: Debug>(rows: Vec<Row<E>>, variant: fn(&E) -> usize, count: usize)
where
    Status: From<E>,
{
    let covered: BTreeSet<usize> = rows.iter().map(|(e, _, _)| variant(e)).collect();
    assert_eq!(
        covered,
        (0..count).collect(),
        "one row for each variant at least"
    );
    for (error, code, message) in rows {
        let shown = format!("{error:?}");
        let status = Status::from(error);
        assert_eq!(status.code(), code, "{shown}");
        assert_eq!(status.message(), message, "{shown}");
        assert!(
            !status.message().contains(SECRET),
            "{shown} leaks its detail"
        );
    }
}

fn machine_variant(error: &MachineError) -> usize {
    match error {
        MachineError::InvalidPoolName(_) => 0,
        MachineError::JoinTtlTooLong { .. } => 1,
        MachineError::OtherWorker { .. } => 2,
        MachineError::OtherPool { .. } => 3,
        MachineError::Store(_) => 4,
    }
}

#[test]
fn machine_errors_reach_their_codes_and_messages() {
    use MachineError as E;
    let rows: Vec<Row<E>> = vec![
        (
            E::InvalidPoolName("Bad".into()),
            Code::InvalidArgument,
            "pool name \"Bad\" must be 1 to 63 lower-case letters, digits or '-', not starting \
             with '-', e.g. gpu-l40s",
        ),
        (
            E::JoinTtlTooLong {
                requested: 10_000_000,
            },
            Code::InvalidArgument,
            "a join token may work for at most 604800 seconds (7 days); ask for less with --ttl",
        ),
        (
            E::OtherWorker {
                machine: "m1".into(),
                worker: "w2".into(),
            },
            Code::PermissionDenied,
            "this is the credential of machine m1: it may only act as worker m1, not \"w2\"",
        ),
        (
            E::OtherPool {
                machine: "m1".into(),
                own_pool: "gpu".into(),
                pool: "cpu".into(),
            },
            Code::PermissionDenied,
            "machine m1 belongs to pool gpu, not \"cpu\"",
        ),
        (E::Store(store_error()), Code::Unavailable, DATABASE),
    ];
    check(rows, machine_variant, 5);
}

fn image_variant(error: &ImageServiceError) -> usize {
    use ImageServiceError as E;
    match error {
        E::Credentials(_) => 0,
        E::NoImageRegistry => 1,
        E::InvalidSpec(_) => 2,
        E::InvalidReference(_) => 3,
        E::BaseImageWithoutRegistry(_) => 4,
        E::BaseImageMissing { .. } => 5,
        E::ImageNotFound { .. } => 6,
        E::CorruptImage { .. } => 7,
        E::MissingBuildObject(_) => 8,
        E::NoBuildPool(_) => 9,
        E::RegistryRefused { .. } => 10,
        E::CredentialsRefused { .. } => 11,
        E::DeletesDisabled(_) => 12,
        E::RegistryUnavailable { .. } => 13,
        E::State(_) => 14,
        E::Fleet(_) => 15,
    }
}

#[test]
fn image_errors_reach_their_codes_and_messages() {
    use ImageServiceError as E;
    let rows: Vec<Row<E>> = vec![
        (
            E::Credentials("no entry for r.example".into()),
            Code::FailedPrecondition,
            "no entry for r.example",
        ),
        (
            E::NoImageRegistry,
            Code::FailedPrecondition,
            "worker.imageRegistry is not set: images are pushed there, so set it \
             (LEVERS9_IMAGE_REGISTRY) to build images",
        ),
        (
            E::InvalidSpec("python_version must be 3.x".into()),
            Code::InvalidArgument,
            "python_version must be 3.x",
        ),
        (
            E::InvalidReference("app".into()),
            Code::InvalidArgument,
            "\"app\" is not a full image reference (registry/repository:tag)",
        ),
        (
            E::BaseImageWithoutRegistry("runner:1".into()),
            Code::FailedPrecondition,
            "base image \"runner:1\" names no registry and imageService.runner.baseImageRegistry \
             is not set: set it (LEVERS9_BASE_IMAGE_REGISTRY) or give a full reference",
        ),
        (
            E::BaseImageMissing {
                name: "runner:1".into(),
                tried: "r.example/runner:1".into(),
            },
            Code::FailedPrecondition,
            "base image \"runner:1\" is not in the registry (tried r.example/runner:1): push it \
             there, or set imageService.runner.baseImageRegistry to a registry that has it",
        ),
        (
            E::ImageNotFound {
                id: "im-1".into(),
                repository: "r.example/levers9".into(),
            },
            Code::NotFound,
            "no image \"im-1\" in r.example/levers9: see levers9 image list",
        ),
        (
            E::CorruptImage {
                id: "im-1".into(),
                source: json_error(),
            },
            Code::Internal,
            CORRUPT,
        ),
        (
            E::MissingBuildObject("the context".into()),
            Code::InvalidArgument,
            "BuildImage needs the context: upload it as an object and pass its digest (the SDK \
             does)",
        ),
        (
            E::NoBuildPool("build".into()),
            Code::FailedPrecondition,
            "no pool \"build\" to build images in: add a worker pool of that name (worker.pools) \
             or set imageService.buildPoolSelector",
        ),
        (
            E::RegistryRefused {
                host: "r.example".into(),
                what: "reading manifest a:1".into(),
            },
            Code::FailedPrecondition,
            "registry r.example refused reading manifest a:1: give the controlplane credentials \
             for r.example (imageService.registryCredentialsFile) or check them",
        ),
        (
            E::CredentialsRefused {
                host: "r.example".into(),
                scope: "repository:a:pull".into(),
            },
            Code::FailedPrecondition,
            "registry r.example refused the credentials for repository:a:pull: check the entry \
             of r.example in imageService.registryCredentialsFile",
        ),
        (
            E::DeletesDisabled("r.example".into()),
            Code::FailedPrecondition,
            "registry r.example does not allow deletes: enable storage.delete in its \
             configuration",
        ),
        (
            E::RegistryUnavailable {
                host: "r.example".into(),
                what: "push".into(),
                detail: SECRET.into(),
            },
            Code::Unavailable,
            DATA,
        ),
        (E::State(state_error()), Code::Unavailable, HOT_STATE),
        (
            E::Fleet(FleetError::UnknownPool("build".into())),
            Code::InvalidArgument,
            "unknown pool \"build\": it is not in worker.pools and no worker has joined it; \
             start one with `levers9 worker --pool build`, make it with `levers9 pool create \
             build`, or pick another pool (levers9 worker list)",
        ),
    ];
    check(rows, image_variant, 16);
}

fn fleet_variant(error: &FleetError) -> usize {
    use FleetError as E;
    match error {
        E::CorruptRecord { .. } => 0,
        E::UnknownPool(_) => 1,
        E::GpuCountWithoutType => 2,
        E::InvalidGpuTypes => 3,
        E::NoRegister => 4,
        E::StreamBroke(_) => 5,
        E::NotRegisterFirst => 6,
        E::IncompleteRegister => 7,
        E::RegisterAgain => 8,
        E::WorkerIdTaken(_) => 9,
        E::WrongRuntime { .. } => 10,
        E::Machine(_) => 11,
        E::Store(_) => 12,
        E::State(_) => 13,
    }
}

#[test]
fn fleet_errors_reach_their_codes_and_messages() {
    use FleetError as E;
    let rows: Vec<Row<E>> = vec![
        (
            E::CorruptRecord {
                what: "worker record".into(),
                source: json_error(),
            },
            Code::Internal,
            CORRUPT,
        ),
        (
            E::UnknownPool("gpu".into()),
            Code::InvalidArgument,
            "unknown pool \"gpu\": it is not in worker.pools and no worker has joined it; start \
             one with `levers9 worker --pool gpu`, make it with `levers9 pool create gpu`, or \
             pick another pool (levers9 worker list)",
        ),
        (
            E::GpuCountWithoutType,
            Code::InvalidArgument,
            "a GPU count needs a GPU type: name the types it accepts, e.g. H100",
        ),
        (
            E::InvalidGpuTypes,
            Code::InvalidArgument,
            "GPU types must be up to 8 non-empty names, e.g. H100",
        ),
        (
            E::NoRegister,
            Code::InvalidArgument,
            "no Register within 10 s of opening the stream",
        ),
        (
            E::StreamBroke("h2 protocol error".into()),
            Code::InvalidArgument,
            "the stream broke: h2 protocol error",
        ),
        (
            E::NotRegisterFirst,
            Code::InvalidArgument,
            "the first message on a worker stream must be Register",
        ),
        (
            E::IncompleteRegister,
            Code::InvalidArgument,
            "Register needs a worker_id and a pool",
        ),
        (
            E::RegisterAgain,
            Code::InvalidArgument,
            "Register may only open a stream",
        ),
        (
            E::WorkerIdTaken("w1".into()),
            Code::FailedPrecondition,
            "worker \"w1\" is connected with another token: give this worker its own \
             --worker-id, or stop the other one first",
        ),
        (
            E::WrongRuntime {
                pool: "gpu".into(),
                wanted: "runsc".into(),
                runtime: "runc".into(),
            },
            Code::FailedPrecondition,
            "pool gpu runs runsc (worker.pools.gpu.runtime) but this worker runs \"runc\": \
             start it with --runtime runsc",
        ),
        (
            E::Machine(MachineError::OtherPool {
                machine: "m1".into(),
                own_pool: "gpu".into(),
                pool: "cpu".into(),
            }),
            Code::PermissionDenied,
            "machine m1 belongs to pool gpu, not \"cpu\"",
        ),
        (E::Store(store_error()), Code::Unavailable, DATABASE),
        (E::State(state_error()), Code::Unavailable, HOT_STATE),
    ];
    check(rows, fleet_variant, 14);
}

fn function_variant(error: &FunctionError) -> usize {
    use FunctionError as E;
    match error {
        E::OverLimit { .. } => 0,
        E::ClassParametersTooLarge(_) => 1,
        E::InvalidEnvName(_) => 2,
        E::SecurityEnvCannotTighten { .. } => 3,
        E::ReservedEnvName(_) => 4,
        E::InvalidMountPath { .. } => 5,
        E::MountPathTwice(_) => 6,
        E::CorruptStubConfig { .. } => 7,
        E::CorruptInput(_) => 8,
        E::CorruptResult(_) => 9,
        E::CorruptReplyName(_) => 10,
        E::RepliesNotFollowed => 11,
        E::EndNotRecorded { .. } => 12,
        E::Stopping => 13,
        E::InvalidDigest(_) => 14,
        E::ObjectTooLarge(_) => 15,
        E::DigestMismatch { .. } => 16,
        E::ObjectNotFound(_) => 17,
        E::Objects(_) => 18,
        E::Volume(_) => 19,
        E::Fleet(_) => 20,
        E::Store(_) => 21,
        E::State(_) => 22,
    }
}

#[test]
fn function_errors_reach_their_codes_and_messages() {
    use FunctionError as E;
    let digest = format!("sha256:{}", "a".repeat(64));
    let rows: Vec<Row<E>> = vec![
        (
            E::OverLimit {
                what: "retries",
                value: 11,
                max: 10,
                hint: "lower retries",
            },
            Code::InvalidArgument,
            "retries is 11, more than the limit of 10: lower retries",
        ),
        (
            E::ClassParametersTooLarge(40_000),
            Code::InvalidArgument,
            "the parameters of the class are 40000 bytes pickled, more than 32768: pass names or \
             paths as parameters and load the data in an @enter method",
        ),
        (
            E::InvalidEnvName("A=B".into()),
            Code::InvalidArgument,
            "env name \"A=B\" is not a valid environment variable name",
        ),
        (
            E::SecurityEnvCannotTighten {
                name: "LEVERS9_SECCOMP".into(),
                value: "off".into(),
                allowed: "observe or enforce".into(),
            },
            Code::InvalidArgument,
            "env LEVERS9_SECCOMP=\"off\" cannot tighten the pool's container security, and a \
             stub can never loosen it: use LEVERS9_SECCOMP=observe or enforce, or leave \
             LEVERS9_SECCOMP out",
        ),
        (
            E::ReservedEnvName("LEVERS9_STUB_ID".into()),
            Code::InvalidArgument,
            "env name LEVERS9_STUB_ID is reserved: names starting with LEVERS9_ are set by the \
             worker (a stub may only set LEVERS9_SECURITY_PROFILE and LEVERS9_SECCOMP, to \
             tighten its pool's security)",
        ),
        (
            E::InvalidMountPath {
                volume: "data".into(),
                path: "data".into(),
            },
            Code::InvalidArgument,
            "volume \"data\" has mount_path \"data\": use an absolute path such as /data",
        ),
        (
            E::MountPathTwice("/data".into()),
            Code::InvalidArgument,
            "two volumes are mounted at \"/data\": give each its own mount_path",
        ),
        (
            E::CorruptStubConfig {
                stub_id: "st-1".into(),
                source: json_error(),
            },
            Code::Internal,
            CORRUPT,
        ),
        (E::CorruptInput("t-1".into()), Code::Internal, CORRUPT),
        (E::CorruptResult("t-1".into()), Code::Internal, CORRUPT),
        (E::CorruptReplyName("run.x".into()), Code::Internal, CORRUPT),
        (E::RepliesNotFollowed, Code::Unavailable, DATA),
        (
            E::EndNotRecorded {
                task_id: "t-1".into(),
                detail: SECRET.into(),
            },
            Code::Unavailable,
            DATA,
        ),
        (E::Stopping, Code::Unavailable, DATA),
        (
            E::InvalidDigest("sha256:../../etc/passwd".into()),
            Code::InvalidArgument,
            "\"sha256:../../etc/passwd\" is not a digest: expected sha256: and 64 lowercase hex \
             digits",
        ),
        (
            E::ObjectTooLarge(300_000_000),
            Code::InvalidArgument,
            "the object is 300000000 bytes, more than the limit of 268435456: add large files to \
             .levers9ignore and put data in a volume",
        ),
        (
            E::DigestMismatch {
                actual: "b".repeat(64),
                digest: digest.clone(),
            },
            Code::InvalidArgument,
            "the data's sha256 is bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb, \
             not the digest given \
             (sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa): upload \
             again",
        ),
        (
            E::ObjectNotFound(digest),
            Code::NotFound,
            "no object sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa: \
             the caller uploads it before using it",
        ),
        (
            E::Objects(ObjectStorageError::Unreachable {
                endpoint: "https://s3.example".into(),
                detail: SECRET.into(),
            }),
            Code::Unavailable,
            DATA,
        ),
        (
            E::Volume(VolumeError::InvalidName("../x".into())),
            Code::InvalidArgument,
            "invalid volume name \"../x\": use 1 to 63 letters, digits, `-`, `_` or `.`, \
             starting with a letter or digit",
        ),
        (
            E::Fleet(FleetError::GpuCountWithoutType),
            Code::InvalidArgument,
            "a GPU count needs a GPU type: name the types it accepts, e.g. H100",
        ),
        (E::Store(store_error()), Code::Unavailable, DATABASE),
        (
            E::Store(StoreError::AlreadyExists("deployment \"app\"".into())),
            Code::AlreadyExists,
            "deployment \"app\"",
        ),
        (E::State(state_error()), Code::Unavailable, HOT_STATE),
    ];
    check(rows, function_variant, 23);
}
