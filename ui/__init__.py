"""Streamlit-side helpers shared by app.py and the page scripts (core/ stays UI-free)."""
