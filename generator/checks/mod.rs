//! Checking routines: assembled objects, fault injection on real CPU modes,
//! the static verifier, `copygen verify`.

pub mod faultinject;
pub mod objfile;
pub mod sandbox;
pub mod static_verify;
pub mod verify;
