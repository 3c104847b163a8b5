"""Reading sources into papers, merging them, and the rebuild that publishes them."""
