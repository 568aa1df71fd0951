//! Prints a topology preset as a topology JSON file, optionally with another
//! node count: `cargo run --release -p topologies --example preset_json --
//! selene 12544` gives Selene's DGX A100 nodes and fabric at 100,352 GPUs
//! (the preset has 560 nodes), which `scripts/bench-scale.sh` simulates.

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(name) = args.first() else {
        eprintln!("usage: preset_json PRESET [NODES]");
        std::process::exit(2);
    };
    let Some(mut spec) = topologies::preset(name) else {
        eprintln!(
            "unknown preset '{name}' (one of {})",
            topologies::preset_names().join(", ")
        );
        std::process::exit(2);
    };
    if let Some(nodes) = args.get(1) {
        match nodes.parse::<u32>() {
            Ok(nodes) if nodes > 0 => {
                spec.name = format!("{} ({nodes} nodes)", spec.name);
                spec.nodes = nodes;
            }
            _ => {
                eprintln!("NODES must be a positive integer, not '{nodes}'");
                std::process::exit(2);
            }
        }
    }
    println!(
        "{}",
        serde_json::to_string_pretty(&spec).expect("a topology serializes")
    );
}
