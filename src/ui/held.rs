//! What a filer may do to an item while it is held, from the overlay's tray and the
//! panel's held section alike.

use redline_protocol::rpc::{UpdateChange, UpdateChangeInput, WithdrawChange, WithdrawChangeInput};

use crate::api::Client;

/// Gives a held item a new title (`updateChange`).
pub async fn retitle(client: &Client, change_id: String, title: String) -> Result<(), String> {
    let input = UpdateChangeInput { change_id, project_id: None, title: Some(title), body: None };
    client.call::<UpdateChange>(input).await.map(drop).map_err(|e| e.to_string())
}

/// Withdraws a held item before it reaches the agent (`withdrawChange`).
pub async fn withdraw(client: &Client, change_id: String) -> Result<(), String> {
    let input = WithdrawChangeInput { change_id, project_id: None };
    client.call::<WithdrawChange>(input).await.map(drop).map_err(|e| e.to_string())
}
