//! One broker as an operator meets it: the command line, connection and request bounds, the
//! admin APIs, the metrics endpoint, and what clients are answered while it stops.

mod admin;
mod authorization;
mod cli;
mod connection_limits;
mod metrics;
mod stopping;
