"""`python -m tests.github_standin`: serve the stand-in until SIGTERM or SIGINT."""

from tests.github_standin.process import main

if __name__ == "__main__":
    main()
