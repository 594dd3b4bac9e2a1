pub mod datasets;
