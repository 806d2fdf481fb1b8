//! `levers9 image`: images built from specs. `build` hands over to the
//! Python SDK (which imports the file the image is defined in); the others
//! call the ImageService.

use std::os::unix::process::CommandExt;
use std::process::Command;

use anyhow::{bail, Result};
use clap::Subcommand;
use levers9_api::v1::{DeleteImageRequest, GetImageRequest, ListImagesRequest};

use crate::output;

/// Image commands.
#[derive(Debug, Subcommand)]
pub enum ImageCommand {
    /// Build an image defined in a Python file (path/file.py::name) unless it
    /// is built already; prints its reference by digest.
    Build {
        /// The image: path/to/file.py::name of a levers9.Image.
        target: String,
        /// Build again from the base image, ignoring what is built
        /// (LEVERS9_FORCE_REBUILD=1 does the same).
        #[arg(long)]
        force_rebuild: bool,
        /// The Python that has the levers9 SDK installed.
        #[arg(long, env = "LEVERS9_PYTHON", default_value = "python3")]
        python: String,
    },
    /// List built images.
    List,
    /// Show an image: its reference, layers and the spec it was built from.
    Show {
        /// Image id (sha256 hex).
        id: String,
    },
    /// Remove an image from the registry (layers other images use stay).
    Rm {
        /// Image id (sha256 hex).
        id: String,
    },
}

/// Runs an image command.
pub async fn run(command: ImageCommand, context: Option<&str>) -> Result<()> {
    let client = match command {
        ImageCommand::Build {
            target,
            force_rebuild,
            python,
        } => return build(&target, force_rebuild, &python, context).await,
        _ => super::connect(context).await?,
    };
    let mut images = client.images();
    match command {
        ImageCommand::Build { .. } => {}
        ImageCommand::List => {
            let list = images
                .list_images(ListImagesRequest {})
                .await?
                .into_inner()
                .images;
            let rows: Vec<Vec<String>> = list
                .into_iter()
                .map(|i| {
                    vec![
                        i.image_id,
                        i.layers.to_string(),
                        i.size_bytes.to_string(),
                        output::or_dash(&i.created_at),
                    ]
                })
                .collect();
            output::table(&["ID", "LAYERS", "BYTES", "CREATED"], &rows);
        }
        ImageCommand::Show { id } => {
            let shown = images
                .get_image(GetImageRequest { image_id: id })
                .await?
                .into_inner();
            let image = shown.image.unwrap_or_default();
            println!("id:        {}", image.image_id);
            println!("reference: {}", image.image_ref);
            println!("created:   {}", output::or_dash(&image.created_at));
            println!("bytes:     {}", image.size_bytes);
            println!("layers:");
            for layer in shown.layer_digests {
                println!("  {layer}");
            }
            println!("spec:      {}", output::or_dash(&shown.spec));
        }
        ImageCommand::Rm { id } => {
            images
                .delete_image(DeleteImageRequest {
                    image_id: id.clone(),
                })
                .await?;
            eprintln!("Image {id} removed");
        }
    }
    Ok(())
}

/// Replaces this process with `python -m levers9.image_cli build …`,
/// connected where this CLI would connect (the token in the environment).
async fn build(target: &str, force: bool, python: &str, context: Option<&str>) -> Result<()> {
    if !target.contains("::") {
        bail!("{target:?} names no image: write path/to/file.py::image_name");
    }
    let connection = crate::first_run::resolve(context).await?;
    let mut command = Command::new(python);
    command
        .args(["-m", "levers9.image_cli", "build", target])
        .args(force.then_some("--force-rebuild"));
    connection.export_to(&mut command);
    let error = command.exec();
    bail!(
        "cannot start {python} ({error}): install Python 3.9+ and the SDK (pip install ./sdk/python), \
         or point --python at the interpreter that has it"
    )
}
