//! `levers9 volume`: the workspace's volumes, and moving files between this
//! machine and a volume through the controlplane.

mod progress;
mod transfer;

use anyhow::{bail, Result};
use clap::Subcommand;
use levers9_api::v1::{
    CreateVolumeRequest, DeleteVolumeRequest, ListFilesRequest, ListVolumesRequest,
    RemoveFileRequest,
};

use crate::output;

/// Volume commands.
#[derive(Debug, Subcommand)]
pub enum VolumeCommand {
    /// Create a volume; functions mount it with Volume("NAME", mount_path="/data").
    Create {
        /// Volume name: letters, digits, -, _ and ., up to 63.
        name: String,
    },
    /// List the workspace's volumes.
    List,
    /// Delete a volume and every file in it.
    Delete {
        /// Volume name.
        name: String,
    },
    /// List the files of a volume (or of a directory in it).
    Ls {
        /// Volume name.
        volume: String,
        /// A directory or file in the volume; default its root.
        #[arg(default_value = "")]
        path: String,
    },
    /// Copy a file between this machine and a volume: VOLUME:PATH names a
    /// file in a volume, anything else a local file. Large files go in
    /// parts and an interrupted copy resumes where it stopped.
    Cp {
        /// Where from: a local file, or VOLUME:PATH.
        source: String,
        /// Where to: VOLUME:PATH (a path ending in / keeps the file name),
        /// or a local file or directory.
        destination: String,
    },
    /// Remove a file (or, with --recursive, a directory) from a volume.
    Rm {
        /// Volume name.
        volume: String,
        /// The file or directory in the volume.
        path: String,
        /// Remove a directory and everything in it.
        #[arg(long, short)]
        recursive: bool,
    },
}

/// A `VOLUME:PATH` argument: a volume name (no `/`) before the first `:`.
fn remote(arg: &str) -> Option<(&str, &str)> {
    let (volume, path) = arg.split_once(':')?;
    (!volume.is_empty() && !volume.contains('/')).then_some((volume, path))
}

/// Runs a volume command.
pub async fn run(command: VolumeCommand, context: Option<&str>) -> Result<()> {
    let client = super::connect(context).await?;
    let mut volumes = client.volumes();
    match command {
        VolumeCommand::Create { name } => {
            volumes
                .create_volume(CreateVolumeRequest { name: name.clone() })
                .await?;
            eprintln!("Created volume {name}");
        }
        VolumeCommand::List => {
            let names = volumes
                .list_volumes(ListVolumesRequest {})
                .await?
                .into_inner()
                .names;
            let rows: Vec<Vec<String>> = names.into_iter().map(|n| vec![n]).collect();
            output::table(&["NAME"], &rows);
        }
        VolumeCommand::Delete { name } => {
            volumes
                .delete_volume(DeleteVolumeRequest { name: name.clone() })
                .await?;
            eprintln!("Deleted volume {name}");
        }
        VolumeCommand::Ls { volume, path } => {
            let entries = volumes
                .list_files(ListFilesRequest { volume, path })
                .await?
                .into_inner()
                .entries;
            let rows: Vec<Vec<String>> = entries
                .into_iter()
                .map(|e| {
                    let (kind, size) = if e.is_dir {
                        ("dir", "-".to_owned())
                    } else {
                        ("file", e.size.to_string())
                    };
                    vec![e.path, kind.into(), size, e.modified_at]
                })
                .collect();
            output::table(&["PATH", "TYPE", "SIZE", "MODIFIED"], &rows);
        }
        VolumeCommand::Rm {
            volume,
            path,
            recursive,
        } => {
            volumes
                .remove_file(RemoveFileRequest {
                    volume: volume.clone(),
                    path: path.clone(),
                    recursive,
                })
                .await?;
            eprintln!("Removed {volume}:{path}");
        }
        VolumeCommand::Cp {
            source,
            destination,
        } => match (remote(&source), remote(&destination)) {
            (None, Some((volume, path))) => {
                transfer::upload(&mut volumes, source.as_ref(), volume, path).await?
            }
            (Some((volume, path)), None) => {
                transfer::download(&mut volumes, volume, path, destination.as_ref()).await?
            }
            (Some(_), Some(_)) => bail!(
                "both {source:?} and {destination:?} are in volumes: copy through this machine, \
                 or inside a function that mounts both"
            ),
            (None, None) => bail!(
                "neither {source:?} nor {destination:?} is in a volume: name one as VOLUME:PATH, \
                 e.g. levers9 volume cp ./data.csv datasets:/data.csv"
            ),
        },
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::remote;

    #[test]
    fn volume_paths_are_told_from_local_ones() {
        assert_eq!(remote("data:/a/b.bin"), Some(("data", "/a/b.bin")));
        assert_eq!(remote("data:"), Some(("data", "")));
        assert_eq!(remote("./x:y"), None);
        assert_eq!(remote("/tmp/file"), None);
        assert_eq!(remote(":x"), None);
    }
}
