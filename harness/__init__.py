"""harness: measure how well a RAG retriever ranks relevant chunks (context precision).

Importing the package does nothing else: heavy libraries (mlflow, openai, rapidfuzz) are
imported by the components that use them.
"""

__version__ = "0.1.0"
