"""`python -m github_standin`: serve the stand-in until SIGTERM or SIGINT."""

from github_standin.process import main

if __name__ == "__main__":
    main()
