//! `clustersim presets`: what is built in.

pub fn run() -> anyhow::Result<()> {
    println!("models:     {}", models::preset_names().join(", "));
    println!("topologies: {}", topologies::preset_names().join(", "));
    println!(
        "profiles:   {}",
        profile::Profile::builtin_names().join(", ")
    );
    println!("schedules:  gpipe, 1f1b, interleaved");
    Ok(())
}
