//! One broker as an operator meets it: the command line, connection and request bounds, the
//! admin APIs, and the metrics endpoint.

mod admin;
mod authorization;
mod cli;
mod connection_limits;
mod metrics;
