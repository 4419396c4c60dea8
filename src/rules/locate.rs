//! "Show on page": finding an item's circled elements again in the live tab. The order
//! of the attempts and what the panel says about them are `redline_protocol::locate`'s
//! (`redline guard` follows the same rule); the DOM side lives in `content::show`
//! (compiled into the content module).

pub use redline_protocol::locate::*;
