//! `levers9 dict` and `levers9 queue`: list and delete the named dicts and
//! queues of your workspace (their contents are read and written from
//! Python, `levers9.Dict` and `levers9.Queue`).

use anyhow::Result;
use clap::Subcommand;
use levers9_api::v1::{
    DeleteDictRequest, DeleteQueueRequest, ListDictsRequest, ListQueuesRequest, NamedObject,
};

use crate::output;

/// Dict commands.
#[derive(Debug, Subcommand)]
pub enum DictCommand {
    /// List the dicts of your workspace, with their number of entries.
    List,
    /// Delete a dict and every entry in it.
    Delete {
        /// Dict name.
        name: String,
    },
}

/// Queue commands.
#[derive(Debug, Subcommand)]
pub enum QueueCommand {
    /// List the queues of your workspace, with their number of items.
    List,
    /// Delete a queue and every item in it.
    Delete {
        /// Queue name.
        name: String,
    },
}

fn print(objects: Vec<NamedObject>, count: &str) {
    let rows: Vec<Vec<String>> = objects
        .into_iter()
        .map(|o| vec![o.name, o.len.to_string(), o.created_at])
        .collect();
    output::table(&["NAME", count, "CREATED"], &rows);
}

/// Runs a dict command.
pub async fn run_dict(command: DictCommand, context: Option<&str>) -> Result<()> {
    let mut dicts = super::connect(context).await?.dicts();
    match command {
        DictCommand::List => {
            let listed = dicts.list_dicts(ListDictsRequest {}).await?.into_inner();
            print(listed.dicts, "ENTRIES");
        }
        DictCommand::Delete { name } => {
            dicts
                .delete_dict(DeleteDictRequest { name: name.clone() })
                .await?;
            eprintln!("Deleted dict {name}");
        }
    }
    Ok(())
}

/// Runs a queue command.
pub async fn run_queue(command: QueueCommand, context: Option<&str>) -> Result<()> {
    let mut queues = super::connect(context).await?.queues();
    match command {
        QueueCommand::List => {
            let listed = queues.list_queues(ListQueuesRequest {}).await?.into_inner();
            print(listed.queues, "ITEMS");
        }
        QueueCommand::Delete { name } => {
            queues
                .delete_queue(DeleteQueueRequest { name: name.clone() })
                .await?;
            eprintln!("Deleted queue {name}");
        }
    }
    Ok(())
}
