"""Enterprise RAG checkers."""
