//! `clustersim presets`: what is built in.

pub fn run() -> anyhow::Result<()> {
    println!("models:     {}", models::preset_names().join(", "));
    println!("topologies: {}", topologies::preset_names().join(", "));
    println!(
        "profiles:   {}",
        profile::Profile::builtin_names().join(", ")
    );
    println!(
        "stacks:     {} (default {})",
        sim::scenario::Stack::builtin_names().join(", "),
        sim::scenario::DEFAULT_STACK
    );
    println!(
        "schedules:  {}",
        sim::scenario::ScheduleKind::names().join(", ")
    );
    Ok(())
}
